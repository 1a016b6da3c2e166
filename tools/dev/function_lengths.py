#!/usr/bin/env python3
"""Functions longer than the limit (60 lines) in the given folders.

    function_lengths.py [--root DIR] [--max N] [--allow FILE] FOLDER...

FOLDER is relative to --root (default: the working directory); "a|b" names
one folder that may be at either path (the first that exists is read; none
existing is an error).

Languages. C++ functions (lambdas included, and counted inside their function
too), Python functions and methods, and JavaScript functions, methods and
functions assigned to a name are found by universal-ctags (Debian's
universal-ctags; a program without extension is read by its #! line). ctags
gives the end line of C++ and Python functions; a JavaScript function's end
is its body's closing brace, found here by matching braces outside strings,
comments and regular expressions. Go, TypeScript, PHP (.php, and a program
whose #! line runs php) and Lua are read here: their comments and literals
are blanked out first, then
- Go: every func with a body (functions, methods as Type.Name, and func
  literals), to the brace that closes the body;
- TypeScript: every function body (functions, methods, constructors,
  accessors, arrow functions with a block), to its closing brace; the same
  functions, lines and ends as the TypeScript compiler's parser finds;
- PHP: every function, method and closure, to its closing brace;
- Lua: every function, to its "end" (function, if, do and repeat open a
  block; end and until close one).
A function without a name is named after the function it is in ("function
in run", "func literal in New"). vendor/, node_modules/, dist/ and build/ are not read.

Tests. The C++ check (tests/CMakeLists.txt: function_length) reads src/ and
tools/, which holds the test helpers (tools/dev: the servers the tests
start), and not tests/, the test cases. The clients follow that rule: the
helper functions of their tests are read, their test cases are not: in a Go
_test.go file a Test, Benchmark, Example or Fuzz function, in a PHP *Test.php
file a test... method, each with the functions inside it, is skipped; a Node
test is an anonymous callback, which the JavaScript parser does not report.

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

NOT_READ = ("vendor", "node_modules", "dist", "build", ".git")  # vendored or generated folders (build: a pip build in clients/python)
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
    cmd = ["ctags", "-R", "-G", *(f"--exclude={d}" for d in NOT_READ), "--languages=C++,Python,JavaScript",
           "--map-C++=+.h", *CTAGS_KINDS,
           "--fields=+nesKl", "-f", "-", *folders]
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
        kind = "js " + cols[3] if fields.get("language") == "JavaScript" else cols[3]
        tags.append((cols[1], cols[0], kind, scope, int(fields["line"]), end))
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


# Go, TypeScript, PHP and Lua are read here, not by ctags (whose TypeScript
# parser misses class methods and whose PHP and Lua parsers give no end line).
# Their comments and literals are first blanked out (lines kept), so that the
# braces and keywords left are code.
SCANNED = {".go": "go", ".ts": "ts", ".php": "php", ".lua": "lua"}
BLOCK_KEYWORDS = re.compile(r"\b(function|if|do|repeat|end|until)\b")  # Lua
LUA_LONG_BRACKET = re.compile(r"\[(=*)\[")
GO_FUNC = re.compile(r"\bfunc\b\s*(?:\(\s*(?:\w+\s+)?\*?\s*(\w+)[^)]*\)\s*)?(?:(\w+)(?=\s*[\[(]))?")
# A test case (and the functions in it), by its file's suffix and its name.
TEST_CASES = {"go": ("_test.go", re.compile(r"(Test|Benchmark|Example|Fuzz)([A-Z_]|$)")),
              "php": ("Test.php", re.compile(r"test"))}
WORD_BEFORE = re.compile(r"([\w$]+)\s*(?:<[^<>(){};]*>)?\s*$")
TS_NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "with", "return", "await", "typeof", "new"}


def skip_quoted(text, i, escapes=True):
    """Index after the quoted literal that opens at text[i]."""
    quote, i = text[i], i + 1
    while i < len(text) and text[i] != quote:
        i += 2 if escapes and text[i] == "\\" else 1
    return i + 1


def found_or_end(text, needle, start, extra=0):
    j = text.find(needle, start)
    return len(text) if j < 0 else j + extra


def literal_end(text, i, lang, last):
    """Index after the comment or literal that opens at text[i], or None."""
    c = text[i]
    if text.startswith("//", i) or (lang == "php" and c == "#"):
        return found_or_end(text, "\n", i)
    if text.startswith("/*", i):
        return found_or_end(text, "*/", i + 2, 2)
    if c in "'\"`" and lang == "ts":  # a template's ${...} too
        return js_skip_string(text, i, c)
    if c in "'\"`":  # a Go raw string (`) has no escapes
        return skip_quoted(text, i, escapes=c != "`")
    if lang == "ts" and c == "/" and last in REGEX_MAY_FOLLOW:
        return js_skip_regex(text, i)
    return None


def lua_literal_end(text, i, lang, last):
    """Index after the Lua comment or string that opens at text[i], or None."""
    comment = text.startswith("--", i)
    long = LUA_LONG_BRACKET.match(text, i + 2 if comment else i)
    if long:
        return found_or_end(text, "]" + long.group(1) + "]", long.end(), len(long.group(1)) + 2)
    if comment:
        return found_or_end(text, "\n", i)
    return skip_quoted(text, i) if text[i] in "'\"" else None


def blank(text, lang):
    """text with its comments and string (and regex) literals as spaces; newlines kept."""
    ends = lua_literal_end if lang == "lua" else literal_end
    chars, i, last = list(text), 0, ""
    while i < len(text):
        end = ends(text, i, lang, last)
        if end is None:
            last = last if text[i].isspace() else text[i]
            i += 1
            continue
        end = min(end, len(text))
        chars[i:end] = [ch if ch == "\n" else " " for ch in text[i:end]]
        last = last if text[i] in "/#-" and text[i + 1:i + 2] in "/*#-" else "a"
        i = end
    return "".join(chars)


def block_close(code, i):
    """Index of the brace that closes the one at code[i] (code blanked)."""
    depth = 0
    for j in range(i, len(code)):
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        if depth == 0:
            return j
    return len(code) - 1


def paren_open(code, i):
    """Index of the "(" that the ")" at code[i] closes."""
    depth = 0
    for j in range(i, -1, -1):
        depth += {")": 1, "(": -1}.get(code[j], 0)
        if depth == 0:
            return j
    return 0


def go_body(code, i):
    """Index of the "{" of the body of a func whose parameters start at or after code[i];
    None for a func type (a parameter's, a field's), which has no body."""
    depth = 0
    while i < len(code):
        c = code[i]
        if c == "{" and re.search(r"\b(interface|struct)\s*$", code[max(0, i - 12):i]):
            i = block_close(code, i)
        elif c == "{" and depth == 0:
            return i
        elif c in "([" or c in ")]":
            depth += 1 if c in "([" else -1
            if depth < 0:
                return None
        elif depth == 0 and c in "\n,;=}":
            return None
        i += 1
    return None


def go_functions(code):
    """(name or None, start, end) of every Go function, method and function literal."""
    out, bodies = [], set()
    for m in GO_FUNC.finditer(code):
        body = go_body(code, m.end() if m.group(2) else m.start() + 4)
        if body is not None and body not in bodies:  # not a func type of a result
            bodies.add(body)
            name = m.group(2) and (m.group(1) + "." if m.group(1) else "") + m.group(2)
            out.append((name, m.start(), block_close(code, body)))
    return out


def lua_functions(code):
    """(name or None, start, end) of every Lua function, its end matched by keyword."""
    tokens, out = list(BLOCK_KEYWORDS.finditer(code)), []
    for k, m in enumerate(tokens):
        if m.group(1) != "function":
            continue
        depth = 0
        for t in tokens[k:]:
            depth += -1 if t.group(1) in ("end", "until") else 1
            if depth == 0:
                break
        named = re.compile(r"function\s+([\w.:]+)").match(code, m.start())
        assigned = re.compile(r"([\w.]+)\s*=\s*$").search(code, max(0, m.start() - 80), m.start())
        name = named.group(1) if named else assigned.group(1) if assigned else None
        out.append((name, m.start(), t.start()))
    return out


def arrow_name(code, arrow):
    """The name a TypeScript arrow function (its "=>" at code[arrow]) is given, or None."""
    head = code[:arrow].rstrip()
    if not head.endswith(")"):
        head = re.sub(r":\s*[^:(){};=]*$", "", head).rstrip()  # a return type
    if head.endswith(")"):
        head = code[:paren_open(code, len(head) - 1)]
    else:
        head = re.sub(r"[\w$]+$", "", head)
    head = re.sub(r"\basync\s*$", "", head.rstrip())[-300:]
    m = re.search(r"([\w$]+)\s*(?::[^=;{}()]*)?=\s*$", head) or re.search(r"([\w$]+)\s*:\s*$", head)
    return m.group(1) if m else None


def before_type(code, j):
    """Index of the ")" before the return type that ends at code[j] ("): Promise<{ a: T }>"),
    or None: the text is not a return type."""
    depth, stop = 0, max(0, j - 2000)
    while j >= stop:
        c = code[j]
        if code.startswith("=>", j - 1):  # a function type's arrow
            j -= 1
        elif c in ")]}>":
            depth += 1
        elif c in "([{<":
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and c == ":":
            k = len(code[:j].rstrip()) - 1
            return k if k >= 0 and code[k] == ")" else None
        elif depth == 0 and c in ";=\n":
            return None
        j -= 1
    return None


def params_close(code, i, lang):
    """Index of the ")" that closes the parameters of a function whose body
    opens at code[i], or None."""
    j = len(code[:i].rstrip()) - 1
    if j < 0 or code[j] in "):":  # after ":", a type literal
        return j if j >= 0 and code[j] == ")" else None
    if lang == "php":
        m = re.search(r"\)\s*:\s*\??[\w\\|]+\s*$", code[max(0, i - 200):i])
        return i - (len(code[max(0, i - 200):i]) - m.start()) if m else None
    return before_type(code, j)


def brace_body_name(code, i, lang):
    """For the "{" at code[i] in TypeScript or PHP: False if it opens no function's
    body, else (the function's name or None, the index its declaration starts at)."""
    before = code[max(0, i - 300):i]
    arrow = re.search(r"=>\s*$", before)
    if lang == "ts" and arrow:
        return arrow_name(code, i - len(before) + arrow.start()), i - len(before) + arrow.start()
    close = params_close(code, i, lang)
    if close is None:
        return False
    opening = paren_open(code, close)
    word = WORD_BEFORE.search(code, max(0, opening - 200), opening)
    computed = re.compile(r"\[([\w$.]+)\]\s*$").search(code, max(0, opening - 200), opening)
    if computed and lang == "ts":  # async [Symbol.asyncDispose]() {
        return computed.group(1), computed.start()
    if not word:
        return False
    if lang == "php" and word.group(1) == "use":
        return brace_body_name(code, word.start(), lang)
    if word.group(1) == "function":
        return None, word.start()
    keyword = re.search(r"\bfunction\s*[*&]?\s*$", code[max(0, word.start() - 40):word.start()])
    if lang == "php" and not keyword:
        return False
    return (False if word.group(1) in TS_NOT_FUNCTIONS and not keyword else (word.group(1), word.start()))


def brace_functions(code, lang):
    """(name or None, start, end) of every TypeScript or PHP function body."""
    out = []
    for m in re.finditer(r"\{", code):
        found = brace_body_name(code, m.start(), lang)
        if found:
            out.append((found[0], found[1], block_close(code, m.start())))
    return out


def shebang_language(path):
    """"php" for a program without extension whose first line runs php, else None."""
    if os.path.splitext(path)[1] or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        first = f.readline()
    return "php" if first.startswith(b"#!") and b"php" in first else None


def scanned_files(root, folders):
    """Paths (relative to root) of the Go, TypeScript, PHP and Lua files under folders;
    vendored and generated folders (vendor, node_modules, dist, build) are not read."""
    for folder in folders:
        for top, dirs, files in os.walk(os.path.join(root, folder)):
            dirs[:] = sorted(d for d in dirs if d not in NOT_READ)
            for f in sorted(files):
                lang = SCANNED.get(os.path.splitext(f)[1]) or shebang_language(os.path.join(top, f))
                if lang:
                    yield os.path.relpath(os.path.join(top, f), root), lang


def scanned_tags(root, folders):
    """Tags as ctags_tags gives them, for the Go, TypeScript, PHP and Lua files."""
    finders = {"go": go_functions, "lua": lua_functions}
    tags = []
    for path, lang in scanned_files(root, folders):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            code = blank(f.read(), lang)
        found = finders[lang](code) if lang in finders else brace_functions(code, lang)
        spans = sorted(((start, end, name) for name, start, end in found), key=lambda s: s[:2])
        for start, end, name in spans:
            outer = [n for s, e, n in spans if n and s < start and end <= e]
            kind = "func literal" if lang == "go" else "function"
            name = name or f"{kind} in {outer[-1] if outer else 'file scope'}"
            suffix, test_name = TEST_CASES.get(lang, (None, None))
            if not (suffix and path.endswith(suffix) and test_name.match((outer or [name])[0])):
                line = code.count("\n", 0, start) + 1
                tags.append((path, name, lang, "", line, line + code.count("\n", start, end)))
    return tags


def lengths(root, tags):
    """[(lines, key)] for every function; key is path:name."""
    out, sources = [], {}
    for path, name, kind, scope, line, end in tags:
        if end is None and kind.startswith("js "):
            if path not in sources:
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    text = f.read()
                starts = [0] + [m.end() for m in re.finditer("\n", text)]
                sources[path] = (text, starts)
            text, starts = sources[path]
            line_text = text[starts[line - 1]:].split("\n", 1)[0]
            if kind in ("js constant", "js variable") and not JS_FUNCTION_VALUE.search(line_text):
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
    found = lengths(root, ctags_tags(root, folders) + scanned_tags(root, folders))
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
