"""The version of cellscope_torch is Cellscope's (pyproject.toml: dynamic): read here from the top CMakeLists.txt's
project(Cellscope VERSION x.y.z), two directories up."""
import os
import re

from setuptools import setup


def cellscope_version():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "CMakeLists.txt")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SystemExit("cellscope_torch: cannot read Cellscope's version from %s (%s): build from a Cellscope "
                         "source tree" % (path, e))
    m = re.search(r"project\(\s*Cellscope\s+VERSION\s+([0-9]+(?:\.[0-9]+)*)", text)
    if not m:
        raise SystemExit("cellscope_torch: %s has no project(Cellscope VERSION x.y.z)" % path)
    return m.group(1)


setup(version=cellscope_version())
