#!/usr/bin/env python3
"""Instructions a PostgreSQL backend runs per pathlock acquire+release pair.

Counted by valgrind's callgrind in a single-user backend: deterministic, so
it compares two versions of the PostgreSQL functions exactly on a busy
machine where timings do not (docs/postgres.md#measured). The backend's
user-space instructions only: the round trips and the WAL flush are not in
it. The pair is the one pathlock-pg-bench times: an upload at a fresh path
of the given depth, then its release.

How: starts a private PostgreSQL (as nobody when run by root) on a Unix
socket in a directory of its own, lets the build's `pathlock shell` acquire once so that the
engine installs its schema and the server logs the exact call, optionally
loads other SQL over it (--sql), stops the server, and runs that call with
fresh paths and ids in `postgres --single` under callgrind: WARM pairs, then
again WARM + PAIRS pairs; the difference over PAIRS is the answer.

Usage: tools/dev/pg_cost/instructions.py [--build DIR] [--pairs N] [--depth D] [--sql FILE]...
  --sql FILE  SQL run after the engine's own schema (repeatable, in order),
              e.g. the schema.sql of another commit: its functions replace
              the build's (the call's arguments must be the same)
Needs valgrind and PostgreSQL's server binaries (/usr/lib/postgresql/*/bin).
Prints: "<n> instructions per pair (...)".
"""
import argparse
import glob
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile

WARM = 20


def server_bin():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    if not found:
        sys.exit("instructions.py: no PostgreSQL server binaries under /usr/lib/postgresql")
    return found[-1]


class Server:
    """A private PostgreSQL cluster, run as nobody when we are root, reached
    only through the Unix socket in its own directory (no TCP port)."""

    def __init__(self, work):
        self.bin, self.work, self.port = server_bin(), work, 5432
        self.data = os.path.join(work, "data")
        self.user = "nobody" if os.geteuid() == 0 else None
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chown(work, pw.pw_uid, pw.pw_gid)
        self.run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust")

    def run(self, tool, *args, stdin=None):
        return subprocess.run([os.path.join(self.bin, tool), *args], user=self.user, stdin=stdin,
                              capture_output=True, text=True, check=True).stdout

    def start(self):
        opts = f"-p {self.port} -k {self.work} -c listen_addresses= -c log_statement=all"
        self.run("pg_ctl", "-D", self.data, "-o", opts, "-l", os.path.join(self.work, "log"), "-w", "start")

    def stop(self):
        self.run("pg_ctl", "-D", self.data, "-w", "stop")

    def url(self):
        return f"postgresql://postgres@/postgres?host={self.work}&port={self.port}"


def captured_call(server, build, path):
    """The engine's acquire of an upload at `path`, as the server logged it:
    the statement and its parameters, as SQL literals."""
    shell = os.path.join(build, "bin", "pathlock")
    subprocess.run([shell, "shell", "--backend", "postgres", "--postgres", server.url()],
                   input=f"acquire bench upload {path}\n", capture_output=True, text=True, check=True)
    log = open(os.path.join(server.work, "log")).read()
    found = re.search(r"execute [^:]*: (SELECT [^\n]*FROM pathlock\.acquire\([^\n]*)\n[^\n]*parameters: ([^\n]*)", log)
    if not found:
        sys.exit("instructions.py: the server logged no pathlock.acquire call")
    values = re.findall(r"\$(\d+) = ('(?:[^']|'')*'|NULL)", found.group(2))
    statement = found.group(1)
    for number, literal in sorted(values, key=lambda v: -int(v[0])):
        statement = statement.replace(f"${number}", literal)
    return statement


def pairs_script(call, path, ids, depth):
    """`call` with fresh paths and ids, each followed by its release."""
    ns = re.search(r"pathlock\.acquire\('((?:[^']|'')*)'", call).group(1)
    grant_id = re.findall(r"'([0-9a-f]{24})'", call)[0]
    token = re.findall(r"'([0-9a-f]{32})'", call)[-1]
    folders = "".join(f"/d{level}" for level in range(1, depth))
    lines = []
    for i in ids:
        fresh = f"{folders}/f{i}"
        one = call.replace(path, fresh).replace(grant_id, f"{i:024x}").replace(token, f"{i:032x}")
        lines += [one + ";", "", f"SELECT pathlock.release('{ns}', '{i:024x}', '{i:032x}');", ""]
    return "\n".join(lines) + "\n"


def counted(server, script, tag):
    """Instructions of a single-user backend that runs `script`."""
    path = os.path.join(server.work, f"{tag}.sql")
    with open(path, "w") as f:
        f.write(script)
    out = os.path.join(server.work, f"cg.{tag}")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
           os.path.join(server.bin, "postgres"), "--single", "-j", "-D", server.data, "postgres"]
    with open(path) as stdin:
        log = subprocess.run(cmd, user=server.user, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True).stdout
    if "ERROR" in log or log.count("granted") != script.count("pathlock.acquire"):
        sys.exit(f"instructions.py: the pairs did not all run:\n{log[-2000:]}")
    totals = [line for line in open(out) if line.startswith(("summary:", "totals:"))]
    return int(totals[-1].split()[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--sql", action="append", default=[])
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("instructions.py: valgrind is not installed")
    work = tempfile.mkdtemp(prefix="pg-cost-")
    try:
        server = Server(work)
        server.start()
        try:
            path = "".join(f"/d{level}" for level in range(1, a.depth)) + "/captured"
            call = captured_call(server, a.build, path)
            for n, sql in enumerate(a.sql):
                copy = shutil.copy(sql, os.path.join(work, f"extra{n}.sql"))  # readable by the server's user
                server.run("psql", "-q", "-h", work, "-p", str(server.port), "-U", "postgres", "-v",
                           "ON_ERROR_STOP=1", "-f", copy, "postgres")
            version = server.run("psql", "-At", "-h", work, "-p", str(server.port), "-U", "postgres", "-c",
                                 "SELECT pathlock.functions_version()", "postgres").strip()
        finally:
            server.stop()
        warm = counted(server, pairs_script(call, path, range(1, WARM + 1), a.depth), "warm")
        full = counted(server, pairs_script(call, path, range(1, WARM + a.pairs + 1), a.depth), "full")
        print(f"{(full - warm) // a.pairs} instructions per pair (upload at depth {a.depth} and its release, "
              f"{a.pairs} pairs after {WARM}; functions version {version}; single-user backend under callgrind)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
