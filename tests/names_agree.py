#!/usr/bin/env python3
"""Every client's folding of names agrees (issue 51; docs/design.md#names).

Feeds the same names to the C++ folding (tests/names_fold_driver.cpp, utf8proc; the
Python client folds through it), Go's (tools/dev/names_fold/fold.go,
golang.org/x/text), PHP's (fold.php, intl's Normalizer and mbstring) and
Node's (fold.js, its ICU's normalize and CaseFolding.txt's table), under both
folding policies, and fails on any line where two of them answer differently
(a folded name, or a refusal and its reason). The names: every code point of
Unicode 13.0 alone, every line of CaseFolding.txt and NormalizationTest.txt
(those with later code points are refused alike), the issue's special cases,
malformed UTF-8, and 3,000 random mixtures of cased letters, combining marks,
Hangul and the special-casing characters (fixed seed).

Usage: names_agree.py --cpp NAMES_FOLD_DRIVER --tools DIR --assigned INC --unicode DIR --normalization FILE
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile


def ucd_fields(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            body = line.split("#", 1)[0].strip()
            if body and not body.startswith("@"):
                yield [field.strip() for field in body.split(";")]


def text(cps):
    return "".join(chr(int(cp, 16)) for cp in cps.split())


def assigned_ranges(inc):
    with open(inc, encoding="utf-8") as f:
        return [(int(a, 16), int(b, 16)) for a, b in re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+)\}", f.read())]


def names(args):
    out = []
    for first, last in assigned_ranges(args.assigned):
        out += [chr(cp).encode("utf-8", "surrogatepass") for cp in range(first, last + 1)
                if cp != 0x0A and not 0xD800 <= cp <= 0xDFFF]
    for f in ucd_fields(os.path.join(args.unicode, "CaseFolding.txt")):
        out += [text(f[0]).encode(), text(f[2]).encode()]
    for f in ucd_fields(args.normalization):
        out += [text(cps).encode() for cps in f[:5]]
    out += [s.encode() for s in ["/p/Docs", "/p/docs/X", "/Straße", "/STRASSE", "/ﬁle", "/\u212a", "/İ", "/ı",
                                 "/Σας", "/\u03b1\u0345\u0301", "/한", "/\u1112\u1161\u11ab", "/Cafe\u0301",
                                 "/．．", "/p/\U0001FAE0", "/\u0cdd", "/\ufdd0"]]
    out += [b"/p/\xc3\x28", b"/\xc0\xaf", b"/\xed\xa0\x80", b"/\xf4\x90\x80\x80", b"/\xe2\x82", b"ab\xff"]
    pool = ([chr(c) for c in range(0x41, 0x5B)] + [chr(c) for c in range(0x61, 0x7B)] + list("ßﬁİıςσΣ\u212a\u0130") +
            [chr(c) for c in range(0xC0, 0x100)] + [chr(c) for c in range(0x300, 0x370)] +
            [chr(c) for c in range(0x391, 0x3CA)] + [chr(c) for c in range(0x1F00, 0x1F30)] +
            [chr(c) for c in range(0xAC00, 0xAC40)] + [chr(c) for c in range(0x1100, 0x1116)] +
            [chr(c) for c in range(0x1161, 0x1176)] + [chr(c) for c in range(0x11A8, 0x11B0)] +
            [chr(c) for c in range(0x13A0, 0x13C0)] + [chr(c) for c in range(0xAB70, 0xAB90)] + ["/", "."])
    rng = random.Random(51)
    out += ["".join(rng.choice(pool) for _ in range(rng.randint(1, 8))).encode() for _ in range(3000)]
    return out


def run(command, inputs, env=None):
    done = subprocess.run(command, input=inputs, capture_output=True, timeout=300, env=env)
    if done.returncode != 0:
        sys.exit(f"names_agree: {' '.join(command)} ended with {done.returncode}: {done.stderr.decode()[-2000:]}")
    return done.stdout.split(b"\n")[:-1]


def main():
    p = argparse.ArgumentParser()
    for name in ("cpp", "tools", "assigned", "unicode", "normalization"):
        p.add_argument("--" + name, required=True)
    args = p.parse_args()
    lines = names(args)
    inputs = b"\n".join(lines) + b"\n"
    cache = tempfile.mkdtemp(prefix="names-agree-go-")
    go_env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode", GOCACHE=cache, GOFLAGS="",
                  GOPROXY="off")
    failed = 0
    for policy in ("nfc", "nfc_casefold"):
        answers = {
            "C++ (utf8proc)": run([args.cpp, policy], inputs),
            "Go (x/text)": run(["go", "run", os.path.join(args.tools, "fold.go"), policy, args.assigned], inputs, go_env),
            "PHP (intl, mbstring)": run(["php", os.path.join(args.tools, "fold.php"), policy, args.assigned], inputs),
            "Node (ICU, CaseFolding.txt)": run(["node", os.path.join(args.tools, "fold.js"), policy, args.assigned,
                                               os.path.join(args.unicode, "CaseFolding.txt")], inputs),
        }
        for who, got in answers.items():
            if len(got) != len(lines):
                sys.exit(f"names_agree: {who} answered {len(got)} lines for {len(lines)} names ({policy})")
        refused = 0
        for i, name in enumerate(lines):
            seen = {who: got[i] for who, got in answers.items()}
            refused += seen["C++ (utf8proc)"].startswith(b"!")
            if len(set(seen.values())) > 1:
                failed += 1
                if failed <= 20:
                    print(f"{policy}: {name!r} folds differently: {seen}")
        print(f"{policy}: {len(lines)} names, {refused} refused alike, {failed} disagreements so far")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
