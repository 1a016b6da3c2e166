#!/usr/bin/env python3
"""Differential fuzz of the clients' drivers (issue 41.6; docs/clients.md#one-set-of-input-rules).

    fuzz.py --driver NAME=CMD [--driver NAME=CMD ...] [--lines N] [--seed S]

Starts one redis-server (the library loaded by `pathlock redis load`, as the
conformance kit does: PATHLOCK_CLI), one process of every driver (each on a
namespace of its own), and sends every driver the same lines of docs/cli.md's
line protocol: --lines generated ones (seeded; the seed is printed, so a
failure can be replayed) and a fixed list of the cases the drivers once
disagreed on. Inputs: owners (controls, invalid UTF-8, lengths at the limits,
quotes), paths (the shared vectors' valid and invalid ones, mutated),
options (ttl, wait, fair, key, reenter: bounds, repeats, empty values,
unknown ones), ids and tokens of held, release, renew, force-release, keep, kept and unkeep, conversions
(`convert` of a lock each driver takes for the line, to any operation, paths and options, and of ids
and tokens no lock has), blockers (half of them the dry run of a conversion, `converts=` the id of the
lock each driver takes for the line, an id no lock has or a malformed one, with fair= and limit=), and
the protocol itself (a UTF-8 BOM, a quoted command word,
a leading NUL, upper case, unterminated quotes, stray escapes, tabs).
Namespaces are a start-up option: every driver is also started once per
candidate namespace, and must start or refuse alike. Last, every driver takes
locks with the same unusual owners in one shared namespace, and every driver
must list all of them alike (a lock written by any client reads in every
other).

Each answer is reduced to what the protocol fixes (an error is an error
whatever its words; a grant is a grant with its holds; a conflict names its
relation and paths; blockers their rows' kinds, owners, operations, roles,
paths and relations, in any order; ids, tokens, fences and times are left out), and the
reductions must be equal for every driver; each line is followed by a
sentinel (`held` of a lock only that driver holds), and a line's answers are
all those before the sentinel's (so a line left unanswered, or answered
twice, is seen as such). A grant is released at once, in
each driver, so that all namespaces stay alike. Prints every disagreement
(line, and each driver's answer); exit status 1 when there is one, 0 when
none, 2 on bad usage.
"""
import argparse
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "kit"))

from kitlib import Driver, DriverGone, RedisServer, driver_argv, fresh_ns, quote  # noqa: E402

OWNERS = ["alice", "bob smith", "é", "项目", "a" * 256, "a" * 257, "", "f\x01z", "\x7f", "tab\there",
          "line\u2028sep", "q\"uote", "back\\slash", "zero\u200dwidth", "\ufeffbom"]
OPS = ["upload", "create_folder", "delete_folder", "move_folder", "copy_file", "purge", "Upload", "nope", ""]
OPTIONS = ["ttl=1", "ttl=0", "ttl=-1", "ttl=604800000", "ttl=604800001", "ttl=", "ttl=1e3", "ttl=5 ttl=6",
           "ttl=007", "ttl=+5", "ttl= 5", "wait=0", "wait=-1", "wait=", "wait=10", "fair=true", "fair=false",
           "fair=TRUE", "fair=1", "fair=", "key=k1", "key=", "key=" + "k" * 128, "key=" + "k" * 129, "key=a/b",
           "key=k1 key=k1", "reenter=abc", "reenter=abc token=def", "token=def", "foo=1", "=5", "ttl",
           '"ttl=5"', "ttl=99999999999999999999"]
PROTOCOL = [b"\xef\xbb\xbfhello", b'"hello"', b"\x00hello", b"HELLO", b"hello extra", b" hello", b"\thello",
            b'acquire "alice upload /p/x', b'acquire "al\\ice" upload /p/x', b'acquire "al\\"ice" upload /p/x',
            b'acquire alice upload "/p/x"y', b'acquire alice upload ""', b"acquire", b"acquire alice",
            b"acquire alice upload", b"acquire\talice\tupload\t/p/tab", b"release", b"release a", b"held a b c",
            b"renew a b ttl=5", b"renew a b ttl=0", b"locks / limit=0", b"locks / limit=10001", b"locks / limit=5",
            b"locks / after=x", b"locks / limit=5 limit=6", b"locks limit=5 /", b"waiters / limit=0",
            b"blockers upload /p/x limit=1001", b"blockers upload", b"nonsense", b"# comment", b"   # comment"]
PROOFS = ["0123456789abcdef01234567", "0" * 32, "x", '""', '"a b"', "0-1", "-", "id=1", "Z" * 200, "é",
          "0123456789ABCDEF01234567"]
NAMESPACES = ["ok-name", "a" * 128, "a" * 129, "with space", "é", "a/b", "", "dots.and:colons_-"]


def sample_path(rng, vectors):
    kind = rng.random()
    if kind < 0.4:
        return rng.choice(vectors["normalize"])["input"]
    if kind < 0.6:
        return rng.choice(vectors["invalid"]).get("input", "/p/x")
    base = rng.choice(["/p", "/p/A", "/项目/文件夹", "/p/My Documents", "/q"])
    tail = rng.choice(["", "/", "/x", "//x", "/./x", "/../x", "/x\x01", "/x\x7f", "/" + "y" * 300, "/x y"])
    return base + tail


def acquire_line(rng, vectors):
    words = ["acquire", quote(rng.choice(OWNERS)), rng.choice(OPS)]
    words += [quote(sample_path(rng, vectors)) for _ in range(rng.choice([1, 1, 1, 2, 0, 3]))]
    words += rng.sample(OPTIONS, rng.choice([0, 0, 1, 1, 2]))
    return " ".join(words).encode("utf-8", "surrogatepass")


def proof_line(rng):
    """held, release, renew, force-release, keep, kept or unkeep of ids and tokens no lock has (or malformed
    ones)."""
    cmd = rng.choice(["held", "release", "renew", "force-release", "keep", "keep", "kept", "unkeep"])
    words = [cmd] + [rng.choice(PROOFS) for _ in range(rng.choice([1, 2, 2, 2, 3]))]
    if cmd in ("renew", "keep") and rng.random() < (0.5 if cmd == "renew" else 0.8):
        words.append(rng.choice(["ttl=1", "ttl=0", "ttl=", "ttl=604800001", '"ttl=5"', "ttl=5 ttl=5", "ttl=1500",
                                 "ttl=-5", "ttl=x", "deadline=5"]))
    return " ".join(words).encode("utf-8")


# In a line, PROOF stands for the id and token of a lock the driver takes
# for that line (an upload of CONVERTED, released after it): conversions of
# a live lock, judged alike by every driver.
PROOF = b"{proof}"
CONVERTED = "/conv/base"
# In a blockers line, OWN_ID stands for the id of that lock; a line with
# converts= takes the lock whatever the id it names.
OWN_ID = b"{id}"
UNKNOWN_ID = "0123456789abcdef0123456z"  # well-formed; no lock has it


def convert_line(rng, vectors):
    """convert of the line's own lock (mostly) or of ids and tokens no lock has, to any operation, paths and
    options (ttl, wait, fair, key, and ones convert does not take)."""
    proof = "{proof}" if rng.random() < 0.8 else " ".join(rng.choice(PROOFS) for _ in range(rng.choice([0, 1, 2])))
    near = [CONVERTED, "/conv", "/conv/base/in", "/sentinel", "/p/x", "/"]
    if rng.random() < 0.5:  # well-formed: meets the lock itself, the sentinel, or nothing
        op, n = rng.choice([("upload", 1), ("delete_folder", 1), ("purge", 1), ("move_folder", 2), ("copy_file", 2)])
        words = ["convert", proof, op] + [quote(rng.choice(near)) for _ in range(n)]
        return " ".join(words + rng.sample(["wait=5", "fair=false", "ttl=1000", "key=k9"], rng.choice([0, 1]))).encode()
    words = ["convert", proof, rng.choice(OPS)]
    words += [quote(rng.choice([sample_path(rng, vectors)] + near)) for _ in range(rng.choice([1, 1, 1, 2, 0, 3]))]
    words += rng.sample(OPTIONS, rng.choice([0, 0, 1, 1, 2]))
    return " ".join(words).encode("utf-8", "surrogatepass")


def blockers_line(rng, vectors):
    """blockers of any operation and path; half of them the dry run of a conversion (converts=) of the line's
    own lock (mostly), of an id no lock has or of a malformed one, near that lock, with fair= and limit=."""
    if rng.random() < 0.5:
        return f"blockers {rng.choice(OPS)} {quote(sample_path(rng, vectors))}".encode("utf-8", "surrogatepass")
    near = [CONVERTED, "/conv", "/conv/base/in", "/sentinel", "/p/x", "/"]
    op, n = rng.choice([("upload", 1), ("delete_folder", 1), ("purge", 1), ("move_folder", 2), ("copy_file", 2),
                        (rng.choice(OPS), rng.choice([0, 1, 3]))])
    paths = [rng.choice(near) for _ in range(n)]  # move_folder's dst at or inside its src: refused by all
    r = rng.random()
    converts = "{id}" if r < 0.6 else UNKNOWN_ID if r < 0.8 else rng.choice(PROOFS + ["", "{id} converts={id}"])
    words = ["blockers", op] + [quote(p) for p in paths] + [f"converts={converts}"]
    words += rng.sample(["fair=false", "fair=true", "fair=", "fair=no", "limit=1", "limit=0", "limit=1001", "limit=",
                         '"converts=x"'], rng.choice([0, 0, 1, 1, 2]))
    return " ".join(words).encode("utf-8")


def generated(rng, vectors, n):
    lines = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            lines.append(convert_line(rng, vectors))
        elif r < 0.55:
            lines.append(acquire_line(rng, vectors))
        elif r < 0.65:
            lines.append(proof_line(rng))
        elif r < 0.8:
            lines.append(rng.choice(PROTOCOL))
        elif r < 0.9:
            lines.append(blockers_line(rng, vectors))
        else:
            lines.append(f"{rng.choice(['locks', 'waiters'])} {quote(sample_path(rng, vectors))}".encode())
    return lines


def fixed_lines():
    """The cases of issue 41 and a few around each."""
    return [b"acquire " + quote("f\x01z").encode() + b" upload /p/ctl", b"acquire \xff upload /p/utf8",
            b"acquire alice upload /p/rep ttl=5 ttl=5", b"acquire alice upload /p/k key=",
            b"\xef\xbb\xbfacquire alice upload /p/bom", b'"acquire" alice upload /p/q',
            b"\x00cancel", b"\x00acquire alice upload /p/nul", b"acquire alice upload /p/x\r",
            b"keep", b"keep a", b"keep a b", b"keep a b ttl=", b"keep a b ttl=0", b'keep a b "ttl=5"',
            b"keep a b ttl=5 ttl=5", b"keep a b ttl=1500", b"keep 0123456789abcdef01234567 x ttl=1500", b"kept",
            b"kept a", b"kept a b", b'"kept" a', b"unkeep", b"unkeep a", b"unkeep a b", b"KEEP a b ttl=5",
            b"convert", b"convert a", b"convert a b", b"convert a b upload", b"convert {proof} upload /conv/other",
            b"convert {proof} upload /conv/other reenter=x token=y", b"convert {proof} move_folder /conv/base /q/m",
            b"convert {proof} move_folder /conv /conv/base/in", b"convert {proof} upload /sentinel",
            b"convert {proof} delete_folder / wait=10", b"convert {proof} upload /conv/k key=k2",
            b"convert {proof} upload /conv/k ttl=0", b'convert {proof} upload "/conv/q r" fair=false',
            b'convert 0123456789ABCDEF01234567 id=1 copy_file "/sentinel" "/p/x"', b"convert ttl=5 key=k upload /conv/x",
            b"blockers delete_folder /conv converts={id}", b"blockers delete_folder /conv converts=" + UNKNOWN_ID.encode(),
            b"blockers upload /conv/base converts={id} fair=false", b"blockers upload /conv/base fair=false",
            b"blockers move_folder /conv /q converts={id} limit=1", b"blockers upload /conv/base converts=",
            b"blockers upload /conv/base converts=a_b", b"blockers upload /conv/base converts={id} converts={id}",
            b'blockers upload /conv/base "converts={id}"', b"blockers upload /conv/base converts={id} fair=true fair=true",
            b"blockers upload converts={id}", b"blockers upload /conv/base converts=" + b"a" * 65]


def reduce(a):
    """What the protocol fixes about one answer."""
    if "error" in a:
        return "error"
    if "granted" in a:
        if a["granted"]:
            return f"granted holds={a.get('holds')}"
        if "conflict" in a:
            c = a["conflict"]
            return "conflict " + " ".join(str(c.get(k)) for k in
                                          ("op", "role", "path", "owner", "requested_role", "requested_path",
                                           "relation", "queued"))
        return "refused " + ",".join(sorted(k for k, v in a.items() if v is True))
    if "locks" in a:
        return f"locks n={len(a['locks'])} next={'next' in a and a['next'] is not None}"
    if "blockers" in a:
        rows = sorted(" ".join(str(b.get(k)) for k in ("kind", "queued", "owner", "op", "role", "path", "requested_role",
                                                         "requested_path", "relation", "holds")) for b in a["blockers"])
        return f"blockers n={len(a['blockers'])} truncated={a.get('truncated')} rows={rows}"
    if "waiters" in a:
        return f"waiters n={len(a['waiters'])}"
    if "client" in a:
        return "hello"
    return json.dumps(a, sort_keys=True)


def sentinels(drivers):
    """Per driver, a line only it can answer {"held":true}: `held` of a lock
    taken for the run (a fuzzed line cannot name its id and token)."""
    out = {}
    for name, d in drivers.items():
        g = d.ask('acquire sentinel upload /sentinel ttl=604800000')
        assert g.get("granted") is True, f"{name}: the sentinel lock was refused: {g}"
        out[name] = f"held {g['id']} {quote(g['token'])}"
    return out


def answers_until_sentinel(d):
    """The answers before the sentinel's: a line answered by none or by two
    shows as such, instead of shifting every later answer."""
    out = []
    while True:
        a = d.answer()
        if a == {"held": True}:
            return out
        out.append(a)


def own_lock(d, line):
    """`line` for driver d: PROOF replaced by the id and token, OWN_ID by the id, of a lock taken for it when
    the line has either or converts= (None: no lock taken)."""
    if PROOF not in line and OWN_ID not in line and b"converts=" not in line:
        return line, None
    g = d.ask(f"acquire fuzz-convert upload {CONVERTED} ttl=600000")
    assert g.get("granted") is True, f"the lock to convert was refused: {g}"
    return line.replace(PROOF, f"{g['id']} {quote(g['token'])}".encode()).replace(OWN_ID, g["id"].encode()), g


def ask_all(drivers, sync, line):
    own = {}
    for name, d in drivers.items():
        sent, own[name] = own_lock(d, line)
        d.send(sent)
        d.send(sync[name])
    answers = {name: answers_until_sentinel(d) for name, d in drivers.items()}
    for name, seen in answers.items():  # keep the namespaces alike
        for a in seen:
            if a.get("granted") is True:
                drivers[name].ask(f"release {a['id']} {quote(a['token'])}")
        g = own[name]
        if g and not any(a.get("granted") is True and a.get("id") == g["id"] for a in seen):
            assert drivers[name].ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    return answers


def run_lines(drivers, lines):
    disagreements = []
    sync = sentinels(drivers)
    for line in lines:
        answers = ask_all(drivers, sync, line)
        reduced = {name: " | ".join(reduce(a) for a in seen) or "no answer" for name, seen in answers.items()}
        if len(set(reduced.values())) > 1:
            disagreements.append((line, answers))
    return disagreements


def listing(d):
    """A driver's `locks /x`, as what every client must read alike."""
    a = d.ask("locks /x")
    assert "locks" in a, a
    return sorted(json.dumps([l["owner"], l["op"], l["targets"], l["holds"]], ensure_ascii=False) for l in a["locks"])


def check_shared_namespace(commands, url):
    """Every driver takes locks with unusual (valid) owners in one namespace,
    and every driver must read the same listing of them, without a crash."""
    ns = fresh_ns("fuzz-shared")
    drivers = {name: Driver(argv, url, ns) for name, argv in commands.items()}
    out = []
    try:
        for i, d in enumerate(drivers.values()):
            for k, owner in enumerate(OWNERS):
                d.ask(f"acquire {quote(owner)} upload {quote(f'/x/{i}/{k}/é f')} ttl=600000")
        seen = {name: listing(d) for name, d in drivers.items()}
        if len(set(json.dumps(v) for v in seen.values())) > 1:
            out.append((b"locks /x in a shared namespace", seen))
        elif not seen[next(iter(seen))]:
            out.append((b"locks /x in a shared namespace: nothing granted", seen))
    finally:
        for d in drivers.values():
            d.close()
    return out


def start_status(argv, url, ns):
    """'starts' when the driver answers hello on namespace ns, else 'refused'."""
    try:
        d = Driver(argv, url, ns)
    except OSError as e:
        return f"cannot run: {e}"
    try:
        d.ask("hello", patience=20)
        d.close()
        return "starts"
    except (DriverGone, AssertionError, BrokenPipeError):  # (gone before hello was written: refused too)
        d.proc.kill()
        d.proc.wait()
        return "refused"


def check_namespaces(commands, url):
    out = []
    for ns in NAMESPACES:
        seen = {name: start_status(argv, url, ns) for name, argv in commands.items()}
        if len(set(seen.values())) > 1:
            out.append((f"--namespace {ns!r}".encode(), seen))
    return out


def load_library(server):
    cli = os.environ.get("PATHLOCK_CLI", "pathlock")
    done = subprocess.run([cli, "redis", "load", "--redis", server.url], capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        sys.exit(f"pathlock redis load failed: {done.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--driver", action="append", required=True, help="NAME=CMD (repeat; at least two)")
    ap.add_argument("--lines", type=int, default=400)
    ap.add_argument("--seed", type=int, default=random.SystemRandom().randrange(1 << 31))
    ap.add_argument("--vectors", default=os.environ.get("PATHLOCK_VECTORS_DIR", ""))
    a = ap.parse_args()
    commands = dict(d.split("=", 1) for d in a.driver if "=" in d)
    if len(commands) < 2 or len(commands) != len(a.driver) or not a.vectors:
        ap.error("give at least two --driver NAME=CMD, and --vectors (or PATHLOCK_VECTORS_DIR)")
    commands = {name: driver_argv(cmd) for name, cmd in commands.items()}
    with open(os.path.join(a.vectors, "paths.json"), encoding="utf-8") as f:
        vectors = json.load(f)
    print(f"differential fuzz: seed {a.seed}, {a.lines} generated lines, drivers {', '.join(commands)}")
    server = RedisServer()
    try:
        load_library(server)
        drivers = {name: Driver(argv, server.url, fresh_ns("fuzz")) for name, argv in commands.items()}
        try:
            lines = fixed_lines() + generated(random.Random(a.seed), vectors, a.lines)
            found = run_lines(drivers, lines)
        finally:
            for d in drivers.values():
                d.close()
        found += check_shared_namespace(commands, server.url)
        found += check_namespaces(commands, server.url)
    finally:
        server.stop()
    for line, answers in found:
        print(f"DISAGREE on {line!r}:")
        for name, ans in answers.items():
            print(f"    {name:8} {ans}")
    print(f"{len(lines)} lines and {len(NAMESPACES)} namespaces through {len(commands)} drivers: "
          f"{len(found)} disagreements")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
