#!/usr/bin/env python3
"""CTest public_headers: the public headers' opening comments say what they
hold (issue 48). Every header of include/pathlock/ opens with
"// pathlock/NAME: ..."; pathlock/pathlock.hpp includes every one of them but
those its opening comment names as included by name; no public header's
opening comment points into src/ (a private header a user cannot include).
Usage: public_headers.py SOURCE_DIR"""
import os
import re
import sys


def opening_comment(text):
    lines = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    return " ".join(lines)


def main():
    root = os.path.join(sys.argv[1], "include", "pathlock")
    names = sorted(n[:-3] if n.endswith(".in") else n for n in os.listdir(root) if n.endswith((".hpp", ".hpp.in")))
    problems = []
    comments = {}
    for name in names:
        path = os.path.join(root, name if os.path.exists(os.path.join(root, name)) else name + ".in")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        comments[name] = opening_comment(text)
        if not comments[name].startswith(f"pathlock/{name}:"):
            problems.append(f"{name}: the opening comment does not start with 'pathlock/{name}:'")
        if re.search(r"\bsrc/[a-z_]+/[a-z_]+\.hpp", comments[name]):
            problems.append(f"{name}: the opening comment points into a private header of src/")
    with open(os.path.join(root, "pathlock.hpp"), encoding="utf-8") as f:
        included = set(re.findall(r"#include <pathlock/([a-z_]+\.hpp)>", f.read()))
    by_name = set(re.findall(r"pathlock/([a-z_]+\.hpp) \(", comments["pathlock.hpp"]))
    for name in names:
        if name == "pathlock.hpp":
            continue
        if name in included and name in by_name:
            problems.append(f"pathlock.hpp includes {name} and says it is included by name")
        if name not in included and name not in by_name:
            problems.append(f"pathlock.hpp neither includes {name} nor names it as included by name")
    for p in problems:
        print(p)
    print(f"{len(names)} public headers, {len(included)} in pathlock.hpp, {len(by_name)} included by name: "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
