#!/usr/bin/env python3
"""CTest test `inventory`: no test goes unrun.

ctest runs each test file through a filter derived from the file's name (tests/CMakeLists.txt):
`cellscope_core_tests --gtest_filter=Suite.*:Suite/*` for tests/core/test_suite.cpp, and
`cellscope_tests NAME` for the Qt Test object registered as NAME. A GoogleTest suite named
otherwise, or a Qt Test object registered under another name, compiles and is never selected;
a file whose filter matches nothing passes without running anything. This lists what each
executable holds and what each ctest entry selects, and fails, naming them, on

  - a test that no ctest entry selects (an orphan), and
  - a ctest entry that selects no test.

    check_inventory.py CTEST BUILD_DIR CORE_TESTS [QT_TESTS]

Before the real check it checks itself on a made-up build tree (fake executables and a
CTestTestfile.cmake) that holds one of each defect, plus a negative filter and a
parameterised test, and fails unless exactly those two are found.
"""
import fnmatch
import json
import os
import subprocess
import sys
import tempfile


def gtest_names(exe):
    """Full names (Suite.test, Prefix/Suite.test/param) from --gtest_list_tests."""
    # Not check=True: under the sanitizers a report at exit can set the status after a complete list.
    r = subprocess.run([exe, "--gtest_list_tests"], capture_output=True, text=True,
                       env=dict(os.environ, CELLSCOPE_TEST_EXCLUDE=""))
    out = r.stdout
    if r.returncode != 0 and not out.strip():
        raise SystemExit(f"inventory: {exe} --gtest_list_tests failed ({r.returncode}):\n{r.stderr}")
    names, suite = [], None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()  # "Suite." or "Prefix/Suite."
        else:
            names.append(suite + line.split("#")[0].strip())
    return names


def gtest_selects(filt, name):
    """GoogleTest's --gtest_filter: POSITIVE[-NEGATIVE], each ':'-separated wildcard patterns."""
    pos, _, neg = filt.partition("-")
    match = lambda pats: any(fnmatch.fnmatchcase(name, p) for p in pats.split(":") if p)
    return match(pos or "*") and not (neg and match(neg))


def qt_names(exe):
    """The registered Qt Test objects: the executable lists them when run without one."""
    r = subprocess.run([exe], capture_output=True, text=True, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    for line in r.stderr.splitlines():
        if line.startswith("tests:"):
            return line.split()[1:]
    raise SystemExit(f"inventory: {exe} without arguments printed no 'tests:' line:\n{r.stderr}")


def inventory(ctest, build, core, qt):
    """(problems, what was checked) for the build tree `build`."""
    entries = json.loads(subprocess.run([ctest, "--test-dir", build, "-N", "--show-only=json-v1"],
                                        capture_output=True, text=True, check=True).stdout)["tests"]
    problems = []

    core_filters = {}  # ctest name -> filter
    qt_args = {}  # ctest name -> registered name
    for e in entries:
        cmd = e.get("command") or []
        if not cmd:
            continue
        if cmd[0].endswith("/cellscope_core_tests"):
            f = [a.split("=", 1)[1] for a in cmd[1:] if a.startswith("--gtest_filter=")]
            core_filters[e["name"]] = f[0] if f else "*"
        elif qt and cmd[0].endswith("/cellscope_tests") and len(cmd) > 1:
            qt_args[e["name"]] = cmd[1]

    names = gtest_names(core)
    if not names:
        problems.append(f"{core} --gtest_list_tests listed no test")
    for n in names:
        if not any(gtest_selects(f, n) for f in core_filters.values()):
            problems.append(f"GoogleTest test {n} is selected by no ctest entry (its suite is not named after "
                            f"its file: tests/core/test_<snake>.cpp holds suite <Camel>, tests/CMakeLists.txt)")
    for t, f in sorted(core_filters.items()):
        if not any(gtest_selects(f, n) for n in names):
            problems.append(f"ctest entry {t} (--gtest_filter={f}) selects no test")
    checked = f"{len(names)} GoogleTest tests, {len(core_filters)} ctest entries"

    if qt:
        registered = qt_names(qt)
        for n in registered:
            if n not in qt_args.values():
                problems.append(f"Qt Test object '{n}' is run by no ctest entry (register it under its file's "
                                f"name: tests/test_{n}.cpp would be)")
        for t, a in sorted(qt_args.items()):
            if a not in registered:
                problems.append(f"ctest entry {t} runs Qt Test object '{a}', which is not registered")
        checked += f"; {len(registered)} Qt Test objects, {len(qt_args)} ctest entries"
    return problems, checked


def self_test(ctest):
    """The checker on a made-up tree with one orphan of each kind and one empty entry of each kind."""
    with tempfile.TemporaryDirectory() as d:
        core, qt = os.path.join(d, "cellscope_core_tests"), os.path.join(d, "cellscope_tests")
        with open(core, "w") as f:
            f.write("#!/bin/sh\nprintf 'Alpha.\\n  one\\n  two\\nP/Beta.\\n  three/0  # GetParam() = 1\\n"
                    "Orphan.\\n  lost\\n'\n")
        with open(qt, "w") as f:
            f.write("#!/bin/sh\necho 'tests: gui lonely' >&2\nexit 2\n")
        os.chmod(core, 0o755)
        os.chmod(qt, 0o755)
        with open(os.path.join(d, "CTestTestfile.cmake"), "w") as f:
            f.write(f'add_test([=[alpha]=] "{core}" "--gtest_filter=Alpha.*:Alpha/*-Alpha.two")\n'
                    f'add_test([=[alpha_two]=] "{core}" "--gtest_filter=Alpha.two")\n'
                    f'add_test([=[beta]=] "{core}" "--gtest_filter=Beta.*:Beta/*:P/Beta.*")\n'
                    f'add_test([=[gamma]=] "{core}" "--gtest_filter=Gamma.*:Gamma/*")\n'
                    f'add_test([=[gui]=] "{qt}" "gui")\n'
                    f'add_test([=[ghost]=] "{qt}" "ghost")\n'
                    f'add_test([=[script]=] "/bin/true")\n')
        problems, _ = inventory(ctest, d, core, qt)
    want = ["GoogleTest test Orphan.lost ", "ctest entry gamma ", "Qt Test object 'lonely' ", "ctest entry ghost "]
    found = [w for w in want if any(w in p for p in problems)]
    if found != want or len(problems) != len(want):
        raise SystemExit("inventory: the self-check on a made-up tree expected exactly " + repr(want) +
                         ", found:\n  " + "\n  ".join(problems))


def main():
    if len(sys.argv) not in (4, 5):
        raise SystemExit(__doc__)
    ctest, build, core = sys.argv[1:4]
    qt = sys.argv[4] if len(sys.argv) == 5 else None
    self_test(ctest)
    problems, checked = inventory(ctest, build, core, qt)
    for p in problems:
        print("inventory: " + p)
    print(f"inventory: {checked}: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
