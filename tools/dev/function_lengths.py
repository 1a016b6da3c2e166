#!/usr/bin/env python3
"""Functions longer than the limit (60 lines) in the given folders.

    function_lengths.py [--root DIR] [--max N] [--allow FILE] FOLDER...

FOLDER is relative to --root (default: the working directory); "a|b" names
one folder that may be at either path (the first that exists is read; none
existing is an error). C++ functions (lambdas included, and counted inside
their function too), Python functions and methods, and JavaScript functions,
methods and functions assigned to a name are found by universal-ctags
(Debian's universal-ctags). ctags gives the end line of C++ and Python
functions; a JavaScript function's end is its body's closing brace, found
here by matching braces outside strings, comments and regular expressions.

A function is named path:name (a lambda: path:lambda in <its function>).
--allow FILE lists the functions allowed to be longer, one per line:
`path:name reason` ('#' starts a comment); a line without a reason, or one
that names no long function any more, is an error, so the list only shrinks.

Prints each offender with its line count; exit status 0 when there is none,
1 when there is, 2 on bad usage or a missing tool or folder.
"""
import argparse
import os
import re
import subprocess
import sys

CTAGS_KINDS = ["--kinds-C++=f", "--kinds-Python=fm", "--kinds-JavaScript=fmgGSCv"]
# A JavaScript constant or variable that holds a function.
JS_FUNCTION_VALUE = re.compile(r"=\s*(async\s+)?(function\b|(\([^)]*\)|[\w$]+)\s*=>)")
REGEX_MAY_FOLLOW = set("(,=:[!&|?{};+-*%<>~^") | {""}


def parse_args():
    p = argparse.ArgumentParser(description="functions longer than --max lines")
    p.add_argument("--root", default=".")
    p.add_argument("--max", type=int, default=60)
    p.add_argument("--allow", help="allow-list file: path:name reason, one per line")
    p.add_argument("folders", nargs="+", help="folders under --root; a|b: whichever exists")
    return p.parse_args()


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def pick_folders(root, specs):
    folders = []
    for spec in specs:
        found = [alt for alt in spec.split("|") if os.path.isdir(os.path.join(root, alt))]
        if not found:
            fail(f"no folder {spec} under {root}")
        folders.append(found[0])
    return folders


def ctags_tags(root, folders):
    """(path, name, kind, scope, line, end or None) for every function ctags finds."""
    cmd = ["ctags", "-R", "--languages=C++,Python,JavaScript", "--map-C++=+.h", *CTAGS_KINDS,
           "--fields=+nesK", "-f", "-", *folders]
    try:
        out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True).stdout
    except (FileNotFoundError, subprocess.CalledProcessError):
        fail("universal-ctags did not run (apt-get install universal-ctags)")
    tags = []
    for row in out.splitlines():
        cols = row.split("\t")
        if len(cols) < 4 or row.startswith("!_"):
            continue
        fields = dict(c.split(":", 1) for c in cols[3:] if ":" in c)
        scope = next((fields[k] for k in ("function", "class", "struct", "member", "method") if k in fields), "")
        end = int(fields["end"]) if "end" in fields else None
        tags.append((cols[1], cols[0], cols[3], scope, int(fields["line"]), end))
    return tags


def js_skip_string(text, i, quote):
    """Index after the string literal that opens at text[i]."""
    i += 1
    while i < len(text) and text[i] != quote:
        if text[i] == "\\":
            i += 1
        elif quote == "`" and text.startswith("${", i):
            i = js_block_end(text, i + 1)
        i += 1
    return i + 1


def js_skip_regex(text, i):
    """Index after the regular expression literal that opens at text[i]."""
    i += 1
    in_class = False
    while i < len(text) and (in_class or text[i] != "/") and text[i] != "\n":
        if text[i] == "\\":
            i += 1
        elif text[i] in "[]":
            in_class = text[i] == "["
        i += 1
    return i + 1


def js_block_end(text, i):
    """Index of the brace that closes the block whose "{" is at text[i]."""
    depth = 0
    last = ""  # the last significant character, to tell a regex from a division
    while i < len(text):
        c = text[i]
        if text.startswith("//", i) or text.startswith("/*", i):
            close = "\n" if text[i + 1] == "/" else "*/"
            j = text.find(close, i + 2)
            i = len(text) if j < 0 else j + len(close)
            continue
        if c in "'\"`":
            i, last = js_skip_string(text, i, c), "a"
            continue
        if c == "/" and last in REGEX_MAY_FOLLOW:
            i, last = js_skip_regex(text, i), "a"
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        if not c.isspace():
            last = c
        i += 1
    return len(text) - 1


def js_end_line(text, line_starts, line):
    """The line of the end of the JavaScript function that starts on `line`."""
    start = line_starts[line - 1]
    depth, i = 0, start
    while i < len(text):  # the body is the first "{" outside the parameters
        c = text[i]
        if c in "'\"`":
            i = js_skip_string(text, i, c)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and c == ";":  # an arrow function without braces
            break
        elif depth == 0 and c == "{":
            i = js_block_end(text, i)
            break
        i += 1
    return text.count("\n", 0, i) + 1


def lengths(root, tags):
    """[(lines, key)] for every function; key is path:name."""
    out, sources = [], {}
    for path, name, kind, scope, line, end in tags:
        if end is None and path.endswith(".js"):
            if path not in sources:
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    text = f.read()
                starts = [0] + [m.end() for m in re.finditer("\n", text)]
                sources[path] = (text, starts)
            text, starts = sources[path]
            line_text = text[starts[line - 1]:].split("\n", 1)[0]
            if kind in ("constant", "variable") and not JS_FUNCTION_VALUE.search(line_text):
                continue
            end = js_end_line(text, starts, line)
        if end is None:
            continue
        if name.startswith("__anon"):
            outer = [s for s in scope.split("::") if s and not s.startswith("__anon")]
            name = "lambda in " + (outer[-1] if outer else "namespace scope")
        out.append((end - line + 1, f"{path}:{name}"))
    return out


def read_allow_list(path):
    allowed, problems = {}, []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            key, _, reason = line.partition(" ")
            if not reason.strip():
                problems.append(f"{path}:{number}: {key} has no reason")
            allowed[key] = number
    return allowed, problems


def main():
    args = parse_args()
    root = os.path.abspath(args.root)
    folders = pick_folders(root, args.folders)
    found = lengths(root, ctags_tags(root, folders))
    long = sorted(((n, key) for n, key in found if n > args.max), reverse=True)
    allowed, problems = read_allow_list(args.allow) if args.allow else ({}, [])
    offenders = [(n, key) for n, key in long if key not in allowed]
    long_keys = {key for _, key in long}
    stale = [key for key in allowed if key not in long_keys]
    print(f"{len(found)} functions in {', '.join(folders)}; {len(long)} longer than {args.max} lines, "
          f"{len(long) - len(offenders)} of them allowed by {args.allow or 'no list'}")
    for n, key in offenders:
        print(f"too long: {key} ({n} lines, at most {args.max})")
    for key in stale:
        problems.append(f"{args.allow}:{allowed[key]}: {key} is no longer longer than {args.max} lines "
                        "(or is gone): remove it from the list")
    for p in problems:
        print(p)
    return 1 if offenders or problems else 0


if __name__ == "__main__":
    sys.exit(main())
