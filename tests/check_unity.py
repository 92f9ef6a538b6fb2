#!/usr/bin/env python3
"""No unity-build clash waits for alphabetical luck (tests/README.md, "Unity builds").

A unity build compiles a target's sources CELLSCOPE_UNITY_BATCH at a time as one translation
unit, so what one file keeps to itself reaches the files after it in its batch:
  - a name with internal linkage (in an anonymous namespace, or `static` at namespace scope)
    defined in two files of one target clashes when they share a batch (a redefinition), or,
    worse, silently joins an overload set; which files share a batch is alphabetical order, so
    adding one file moves the others;
  - a `using namespace` at file scope, or a macro not #undef'd by the end of its file, changes
    how the next files of the batch read.
Each is refused here for every unity target of a build, whatever the batches are today. A
target's files are read from CMake's unity sources in the build folder
(CMakeFiles/<target>.dir/Unity/unity_*_cxx.cxx), so the check follows the build exactly.

usage: check_unity.py BUILD_DIR      exit 0 clean, 1 a clash (each printed), 2 usage
       check_unity.py --self-test    the checker against made-up sources (each defect found once)

The reader is a tokenizer, not a C++ parser: comments, string, character and raw-string literals
are removed first; braces are matched; a declaration is read at namespace scope only (never
inside a function, class or initializer). Names that look like macro calls (ALL_CAPS followed by
`(`) are not declarations. Heuristics, but each defect kind is tested below (--self-test).
"""
import functools
import glob
import os
import re
import sys
import tempfile

# Comments, literals and preprocessor lines blanked (newlines kept): the same reader as
# tests/check_sizes.py's, so that the two checks read C++ alike.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_sizes import blank_literals  # noqa: E402


IDENT = re.compile(r"[A-Za-z_]\w*")
KEYWORDS = {"const", "constexpr", "inline", "static", "extern", "volatile", "unsigned", "signed", "struct",
            "class", "enum", "union", "typename", "template", "auto", "void", "bool", "char", "int", "long",
            "short", "float", "double", "thread_local", "mutable", "operator", "noexcept", "override", "final",
            "return", "std", "size_t", "int64_t", "uint64_t", "int32_t", "uint32_t", "uint8_t", "alignas"}


def strip_templates(head):
    """`template <...>` prefixes and <...> argument lists removed (nested)."""
    out, depth = [], 0
    for ch in head:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def declared_name(head):
    """The name a namespace-scope declaration head declares, or None."""
    h = " ".join(strip_templates(head).split())
    h = re.sub(r"^template\s*", "", h)
    h = re.sub(r"\[\[[^\]]*\]\]", "", h)
    h = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", "", h).strip()
    if not h or h.startswith("#"):
        return None
    m = re.match(r"^(?:typedef\s.*\W)?using\s+(\w+)\s*=", h)
    if m:
        return m.group(1)
    if h.startswith("using ") or h.startswith("namespace ") or re.match(r'extern\s*"\s*"', h):
        return None
    m = re.match(r"^(?:(?:static|inline|constexpr|const)\s+)*(?:struct|class|union|enum(?:\s+class|\s+struct)?)\s+(\w+)", h)
    if m:
        return m.group(1)
    if h.startswith("typedef "):
        ids = IDENT.findall(h)
        return ids[-1] if ids else None
    # a function: the identifier before the first '(' at depth 0; a variable: before '=', '{' or end
    paren = h.find("(")
    eq = h.find("=")
    if paren >= 0 and (eq < 0 or paren < eq):
        before = h[:paren].rstrip()
        if re.search(r"\boperator\s*\S*$", before):
            return None
        m = re.search(r"([A-Za-z_]\w*)$", before)
        if not m or re.fullmatch(r"[A-Z][A-Z0-9_]*", m.group(1)):
            return None  # a macro call (TEST(...), Q_DECLARE_METATYPE(...)), not a declaration
        return m.group(1)
    cut = min([p for p in (eq, h.find("["), len(h)) if p >= 0])
    ids = [t for t in IDENT.findall(h[:cut]) if t not in KEYWORDS]
    return ids[-1] if ids else None


def scan(path):
    """(internal names, file-scope using-directives, macros left defined) of one source file."""
    raw = open(path, encoding="utf-8", errors="replace").read()
    defines, undefs = {}, set()
    for no, line in enumerate(raw.splitlines(), 1):
        m = re.match(r"\s*#\s*define\s+(\w+)", line)
        if m:
            defines.setdefault(m.group(1), no)
        m = re.match(r"\s*#\s*undef\s+(\w+)", line)
        if m:
            undefs.add(m.group(1))
    text = blank_literals(raw)
    internal, usings = {}, []
    stack = []  # 'anon', 'ns:NAME' or 'block' for each open brace
    head_start = 0
    i, n = 0, len(text)

    opened = set()  # the named namespaces this file opens

    def scope_of():
        return "::".join(s[3:] for s in stack if s.startswith("ns:") and s != "ns:")

    def at_namespace_scope():
        return all(s != "block" for s in stack)

    def line_of(pos):
        return text.count("\n", 0, pos) + 1

    def note(head, pos, is_block):
        if not at_namespace_scope():
            return
        h = " ".join(head.split())
        if not h:
            return
        anon = "anon" in stack
        if re.match(r"^using\s+namespace\b", h):
            usings.append((line_of(pos), h, scope_of()))
            return
        is_static = re.match(r"^(?:template\s*<.*?>\s*)?(?:inline\s+)?static\b", h) is not None
        if anon or is_static:
            name = declared_name(h)
            if name:
                # The scope the name lives in: its named namespaces (every anonymous namespace of
                # one translation unit, and so of one unity batch, is the same namespace).
                scope = scope_of()
                internal.setdefault((scope + "::" if scope else "") + name, line_of(pos))

    paren = 0
    while i < n:
        c = text[i]
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        elif c == "{" and paren == 0:
            head = text[head_start:i]
            h = " ".join(head.split())
            m = re.match(r"^(?:inline\s+)?namespace(\s+[\w:]+)?\s*$", h)
            if m:
                stack.append("ns:" + m.group(1).strip() if m.group(1) else "anon")
                if m.group(1):
                    opened.add(scope_of())
            elif re.match(r'extern\s*"\s*"', h) and at_namespace_scope():
                stack.append("ns:")
            else:
                note(head, head_start + len(head) - len(head.lstrip()), True)
                stack.append("block")
            head_start = i + 1
        elif c == "}" and paren == 0:
            if stack:
                stack.pop()
            head_start = i + 1
            # a class/enum body ends with `};`, a variable's braces with `} ;` or `}, x;`
            j = i + 1
            while j < n and text[j] in " \t\n":
                j += 1
            if j < n and text[j] == ";":
                head_start = j + 1
                i = j
        elif c == ";" and paren == 0:
            head = text[head_start:i]
            if at_namespace_scope():
                note(head, head_start + len(head) - len(head.lstrip()), False)
            head_start = i + 1
        i += 1
    left = {k: v for k, v in defines.items() if k not in undefs}
    return internal, usings, left, opened


@functools.lru_cache(maxsize=None)
def read_rules(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def current(build, u):
    """Whether unity file u is one the build compiles: CMake leaves the batches of an earlier layout behind
    (a target that lost sources has fewer batches), and their files still name sources of the target."""
    ninja = os.path.join(build, "build.ninja")
    make = os.path.join(os.path.dirname(os.path.dirname(u)), "build.make")
    for rules, name in ((ninja, os.path.relpath(u, build)), (make, os.path.join("Unity", os.path.basename(u)))):
        if os.path.isfile(rules):
            return (name + ".o") in read_rules(rules)
    return True


def targets(build):
    """{target: [source files]} from CMake's unity sources under BUILD_DIR."""
    out = {}
    for u in sorted(glob.glob(os.path.join(build, "**", "CMakeFiles", "*.dir", "Unity", "unity_*_cxx.cxx"),
                           recursive=True)):
        if not current(build, u):
            continue
        t = os.path.basename(os.path.dirname(os.path.dirname(u)))[:-len(".dir")]
        for line in open(u, encoding="utf-8"):
            m = re.match(r'\s*#include\s+"(.+)"', line)
            if m and m.group(1).endswith((".cpp", ".cc", ".cxx")):
                out.setdefault(t, []).append(m.group(1))
    return out


# Names each file of a target may define alone, whatever the others do: none today. A name listed
# here needs a reason beside it.
ALLOWED = {}


def check(tgts, say=print):
    bad = 0
    for t, files in sorted(tgts.items()):
        seen = {}
        scans = {f: scan(f) for f in files}
        for f in files:
            internal, usings, left, _ = scans[f]
            for line, h, scope in usings:
                # Inside a namespace no other file of the target opens, a using-directive stays in
                # that file; at global scope, or in a namespace the others share, it reaches them.
                shared = scope == "" or any(scope in scans[g][3] for g in files if g != f)
                if not shared:
                    continue
                say(f"{f}:{line}: [{t}] '{h}' at file scope reaches the next files of its unity batch "
                    "(put it inside the functions that use it, or name the namespace)")
                bad += 1
            for name, line in sorted(left.items(), key=lambda kv: kv[1]):
                say(f"{f}:{line}: [{t}] macro {name} is not #undef'd by the end of the file: it reaches the next "
                    "files of its unity batch")
                bad += 1
            for name, line in internal.items():
                seen.setdefault(name, []).append((f, line))
        for name, where in sorted(seen.items()):
            if len(where) > 1 and name not in ALLOWED:
                places = ", ".join(f"{f}:{line}" for f, line in where)
                say(f"[{t}] internal name '{name}' is defined in {len(where)} files of one unity target: {places} "
                    "(one home in a shared header, or a name of its own in each)")
                bad += 1
    return bad


def self_test():
    cases = {
        "a.cpp": 'namespace cs {\nnamespace {\nstd::string lower(std::string s) { return s; }\n'
                 'struct Row { int x; };\nconst char* kName = "a{";\n}  // namespace\n'
                 'void f() { using namespace std; auto g = [] { return 1; }; }\n}\n',
        "b.cpp": 'namespace cs {\nnamespace {\nstd::string lower(std::string s) { return s + ")"; }\n}\n'
                 'static int helper(int x) { return x; }\n}\nusing namespace cs::kernels;\n'
                 '#define LEAK 1\n#define GONE 2\n#undef GONE\nTEST(Foo, bar) { int Row = 2; }\n'
                 'namespace b_test {\nusing namespace cs;\n}\nnamespace cs {\nusing namespace cs::shared;\n}\n',
        "c.cpp": 'namespace cs {\nstatic int helper(int y) { return y; }\n'
                 'const char* raw = R"x(namespace { int lower; })x";\n}\n',
    }
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, body in cases.items():
            paths[name] = os.path.join(d, name)
            open(paths[name], "w").write(body)
        lines = []
        bad = check({"t": [paths["a.cpp"], paths["b.cpp"], paths["c.cpp"]]}, lines.append)
        text = "\n".join(lines)
        want = ["internal name 'cs::lower' is defined in 2 files", "internal name 'cs::helper' is defined in 2 files",
                "'using namespace cs::kernels'", "macro LEAK",
                "'using namespace cs::shared'"]
        missing = [w for w in want if w not in text]
        unwanted = [w for w in ("'Row'", "GONE", "using namespace std", "'kName'", "'TEST'", "'raw'") if w in text]
        if missing or unwanted or bad != len(want):
            print("check_unity.py: self-test failed:\n" + text + f"\nmissing {missing}, unwanted {unwanted}, {bad} found",
                  file=sys.stderr)
            return False
    return True


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return 0 if self_test() else 1
    if len(argv) != 2:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    if not self_test():
        return 1
    tgts = targets(argv[1])
    if not tgts:
        print(f"check_unity.py: no unity sources under {argv[1]} (configure with CELLSCOPE_UNITY=ON and build first)",
              file=sys.stderr)
        return 1
    bad = check(tgts)
    nfiles = sum(len(v) for v in tgts.values())
    print(f"check_unity.py: {len(tgts)} unity targets, {nfiles} files: {bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
