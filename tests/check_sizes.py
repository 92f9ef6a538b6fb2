#!/usr/bin/env python3
"""Source sizes (#54 item 7): no C++ file over 800 lines, no function over 120 lines.

    check_sizes.py [--root DIR] [--list] [--self-test]

Reads the C++ files of the repository (`git ls-files '*.cpp' '*.h'` in DIR, the repository root by
default, plus new files git does not ignore; fuzz corpora, any path with a `corpus` folder in it,
are left out), prints the counts
the issue quotes

    files > 600 lines, files > 800 lines, functions > 80 lines, functions > 120 lines

and lists every file over 800 lines and every function over 120 lines, each marked `allowed`
where ALLOWED below names it. Exits 1 when something outside ALLOWED is over a limit, 0
otherwise. --list also lists files over 600 and functions over 80 lines (the soft sizes).

How functions are found (a heuristic, not a C++ parser):
  - comments, string and character literals (raw strings included) are blanked first, and
    preprocessor lines (with their continuations) are skipped, so their braces do not count;
  - each `{` is classed by the text before it since the last `;`, `{` or `}` (its header):
      * `namespace`, `class`, `struct`, `union`, `enum`, `extern "C"` headers open a scope
        whose members are looked at again;
      * a header that ends in `)` plus optional qualifiers (const, noexcept, override, final,
        `-> type`, `&`, `&&`, a constructor's `: member(init)` list) and whose name before its
        first top-level `(` is an identifier, `A::b`, `~A` or `operator...` that is not a
        keyword (if, for, while, switch, catch, ...) opens a function;
      * anything else (a brace-init, an `= {` table, a block) is part of what holds it;
  - a function's length runs from the line of its name to the line of its closing `}`, both
    counted; a lambda or local class inside a function is part of that function, not its own;
  - a test macro (`TEST(Suite, Name) {`, `TEST_F`, a Qt Test slot) is a function like any other
    and is named by its macro and arguments.
The check on the made-up sources in self_test() runs with every call, so a scanner that stops
finding functions fails instead of passing quietly.
"""
import argparse
import os
import re
import subprocess
import sys

FILE_LIMIT, FILE_SOFT = 800, 600
FUNC_LIMIT, FUNC_SOFT = 120, 80

# What may stay over the limits: kernels (one fused computation that reads best whole) and
# tables (data written as code). A path for a file, "path:function" for a function; each with
# the reason. Nothing else is allowed.
ALLOWED = {
    "core/model/cells/fused_mzu.cpp":
        "kernel: the MZU's fused CPU forward and backward, hand-written loops (MZU_NOTES.md)",
    "core/model/cells/fused_mzu.cpp:step_forward":
        "kernel: one fused MZU forward step, a single hand-written pass",
    "tests/core/test_equations_mzu.cpp:ref_block":
        "kernel: the MZU paper's equations written out one scalar at a time (the reference the cell is checked against)",
    "tests/core/test_hostile_input.cpp:formats":
        "table: one row per input format, its files and the loader that reads them",
}


def blank_literals(text):
    """text with comments, string and char literals replaced by spaces (newlines kept), and
    preprocessor lines (with their continuations) blanked, so that only code braces remain."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start:
            j = i
            while j < n and text[j] in " \t":
                j += 1
            if j < n and text[j] == "#":
                # A preprocessor line, continued by a trailing backslash.
                k = j
                while k < n:
                    e = text.find("\n", k)
                    if e < 0:
                        e = n
                    if e > 0 and text[e - 1] == "\\" and e < n:
                        k = e + 1
                        continue
                    break
                out.append(re.sub(r"[^\n]", " ", text[i:e]))
                i = e
                at_line_start = False
                continue
        if c == "\n":
            out.append(c)
            i += 1
            at_line_start = True
            continue
        at_line_start = False
        if text.startswith("//", i):
            e = text.find("\n", i)
            e = n if e < 0 else e
            out.append(" " * (e - i))
            i = e
        elif text.startswith("/*", i):
            e = text.find("*/", i + 2)
            e = n if e < 0 else e + 2
            out.append(re.sub(r"[^\n]", " ", text[i:e]))
            i = e
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
                                                                 or text[i - 1] in "uU8L"):
            m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            e = n if end < 0 else end + len(m.group(1)) + 2
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:e - 1]) + '"')
            i = e
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum() and text[i - 1] != "u")):
            # A string or char literal (a ' between digits is a digit separator: 1'000).
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


SCOPE_RE = re.compile(r"(^|[\s;}])(namespace|class|struct|union|enum|extern\s+\"\s*\")\b")
KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "decltype", "do", "else",
            "try", "new", "delete", "throw", "static_assert", "requires", "noexcept", "alignas"}
QUALIFIERS_RE = re.compile(r"\)\s*((const|volatile|noexcept(\s*\([^()]*\))?|override|final|mutable|&&|&)\s*)*"
                           r"(->\s*[\w:<>,\s*&]+)?\s*$")


def top_level_colon(header):
    """Index of a constructor's init-list `:` (a lone `:` at paren depth 0 after a `)`), or -1."""
    depth, seen_paren = 0, False
    for k, ch in enumerate(header):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                seen_paren = True
        elif ch == ":" and depth == 0 and seen_paren:
            prev = header[k - 1] if k else ""
            nxt = header[k + 1] if k + 1 < len(header) else ""
            if prev != ":" and nxt != ":":
                return k
    return -1


def function_name(header):
    """The function's name if the header (text before a `{`) opens a function, else None."""
    h = header.strip()
    if not h or h.endswith("=") or h.endswith(",") or h.endswith("return"):
        return None
    colon = top_level_colon(h)
    signature = h[:colon] if colon >= 0 else h
    if colon >= 0 and not re.search(r"[)}]\s*$", h):  # `A() : b_{` opens a member's brace-init
        return None
    if not QUALIFIERS_RE.search(signature):
        return None
    # The first top-level '(' and the name just before it.
    depth = 0
    for k, ch in enumerate(signature):
        if ch == "(" and depth == 0:
            before = signature[:k].rstrip()
            m = re.search(r"(operator\s*(\(\)|[^\w\s(]+|\s\w[\w\s:*&<>]*)|~?[A-Za-z_]\w*(\s*<[^<>()]*>)?"
                          r"(\s*::\s*~?[A-Za-z_]\w*(\s*<[^<>()]*>)?)*)$", before)
            if not m:
                return None
            name = re.sub(r"\s+", "", m.group(0))
            last = name.split("::")[-1]
            if last in KEYWORDS or (not last.startswith("operator") and re.search(r"[=\]]\s*$", before[:m.start()])):
                return None
            if re.fullmatch(r"[A-Z][A-Z0-9_]*", name):  # a macro: TEST(Suite, Name) and the like
                close = signature.find(")", k)
                name += re.sub(r"\s+", " ", signature[k:close + 1])
            return name
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
    return None


def scan(text):
    """[(name, first_line, last_line)] for the functions of a C++ text (see the module doc)."""
    code = blank_literals(text)
    functions = []
    stack = []  # each open brace: (kind, name, first_line); kind in scope, func, other
    header_start = 0
    line = 1
    for i, ch in enumerate(code):
        if ch == "\n":
            line += 1
        elif ch == ";":
            if not stack or stack[-1][0] == "scope":
                header_start = i + 1
        elif ch == "{":
            in_func = any(kind != "scope" for kind, _, _ in stack)
            if in_func:
                stack.append(("other", None, 0))
                continue
            header = code[header_start:i]
            if SCOPE_RE.search(" " + header) and "(" not in header.split("{")[0].split("=")[0]:
                stack.append(("scope", None, 0))
                header_start = i + 1
                continue
            name = function_name(header)
            if name:
                m = re.search(re.escape(name.split("(")[0].split("::")[-1].split("<")[0][:20]), header)
                first = line - header[m.start() if m else len(header):].count("\n") if m else line
                stack.append(("func", name, first))
            else:
                stack.append(("other", None, 0))
        elif ch == "}":
            if not stack:
                continue
            kind, name, first = stack.pop()
            if kind == "func":
                functions.append((name, first, line))
            # A brace-init inside a header (`b_{b}` in an init list, `T x{}` at namespace scope)
            # leaves the header open; a closed scope or function starts the next one.
            if kind in ("scope", "func") or not stack or stack[-1][0] == "scope":
                if kind != "other":
                    header_start = i + 1
    return functions


def self_test():
    src = r'''
#include <x>
#define BLOCK { {
namespace a {
struct S { int f() const { return 1; } };
// a comment with { a brace
S::S(int x) : x_(x), y_{x} {
  if (x) {
    auto l = [&](int k) { return k; };
  }
}
int g(int n) noexcept {
  const char* s = "}}}";
  const char* r = R"x(})x";
  char c = '{';
  for (int i = 0; i < n; ++i) { }
  return 0;
}
static const int kTable[] = {
  1, 2, 3,
};
TEST(Suite, Name) {
  int v{3};
}
auto h() -> int {
  return 2;
}
}  // namespace a
'''
    got = [(n, a, b) for n, a, b in scan(src)]
    want = [("f", 5, 5), ("S::S", 7, 11), ("g", 12, 18), ("TEST(Suite, Name)", 22, 24), ("h", 25, 27)]
    if got != want:
        raise SystemExit(f"check_sizes: the scanner's self-test failed:\n  got  {got}\n  want {want}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=None, help="the repository (default: the one holding this script)")
    ap.add_argument("--list", action="store_true", help="also list files over 600 and functions over 80 lines")
    args = ap.parse_args()
    self_test()
    root = args.root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # Tracked files and new ones not yet added (not the ignored: build folders); outside a git
    # checkout (an exported tree: git archive), every .cpp and .h below the root.
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.cpp", "*.h"],
                            cwd=root, capture_output=True, text=True)
    if listed.returncode == 0:
        files = sorted(set(listed.stdout.split()))
    else:
        files = []
        for d, dirs, names in os.walk(root):
            # A build folder (CMake's compiler probes are C++ too) or a hidden one is not the project's code:
            # the Debian 13 stage copies the checkout without .git and builds inside it.
            if "CMakeCache.txt" in names or "CMakeFiles" in d.split(os.sep):
                dirs[:] = []
                continue
            dirs[:] = [x for x in dirs if not x.startswith(".") and x != "CMakeFiles"]
            files += [os.path.relpath(os.path.join(d, f), root) for f in names if f.endswith((".cpp", ".h"))]
        files.sort()
    files = [f for f in files if "corpus" not in f.split("/")[:-1] and os.path.isfile(os.path.join(root, f))]
    long_files, long_funcs = [], []
    for f in sorted(files):
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if n > FILE_SOFT:
            long_files.append((n, f))
        for name, a, b in scan(text):
            if b - a + 1 > FUNC_SOFT:
                long_funcs.append((b - a + 1, f, name, a))
    files_800 = [x for x in long_files if x[0] > FILE_LIMIT]
    funcs_120 = [x for x in long_funcs if x[0] > FUNC_LIMIT]
    def counts(keep):
        return (f"files > {FILE_SOFT} lines: {sum(keep(x[1]) for x in long_files)}, "
                f"> {FILE_LIMIT}: {sum(keep(x[1]) for x in files_800)}; "
                f"functions > {FUNC_SOFT} lines: {sum(keep(x[1]) for x in long_funcs)}, "
                f"> {FUNC_LIMIT}: {sum(keep(x[1]) for x in funcs_120)}")

    print(f"files read: {len(files)}")
    print("all:         " + counts(lambda f: True))
    print("outside tests/: " + counts(lambda f: not f.startswith("tests/")))
    bad = 0
    for n, f in sorted(long_files if args.list else files_800, reverse=True):
        over = n > FILE_LIMIT
        mark = "allowed" if f in ALLOWED else ("OVER" if over else "")
        bad += over and f not in ALLOWED
        print(f"  file {n:5d} {f} {mark}".rstrip())
    for n, f, name, a in sorted(long_funcs if args.list else funcs_120, reverse=True):
        over = n > FUNC_LIMIT
        allowed = f in ALLOWED or f"{f}:{name}" in ALLOWED
        mark = "allowed" if allowed else ("OVER" if over else "")
        bad += over and not allowed
        print(f"  func {n:5d} {f}:{a} {name} {mark}".rstrip())
    if bad:
        print(f"check_sizes: {bad} over the limits ({FILE_LIMIT} lines a file, {FUNC_LIMIT} a function) "
              f"and not in ALLOWED (tests/check_sizes.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
