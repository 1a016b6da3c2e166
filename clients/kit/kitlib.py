"""The conformance kit's helpers: a redis-server of its own (from the one
test launcher, tests/support/pathlock-testenv), a tiny RESP
client (to load the library and read what the functions answer), and the
driver processes it talks to over the shell line protocol (docs/clients.md)."""
import json
import os
import queue
import shlex
import socket
import subprocess
import sys
import threading
import time
import uuid

# How long any one answer may take before the kit calls the driver stuck. A
# bound against hanging forever, never a measure of speed.
PATIENCE_S = 60.0


def fresh_ns(tag="kit"):
    return f"{tag}-{uuid.uuid4().hex[:12]}"


def quote(word):
    """A word of the line protocol: always quoted, with \\" and \\\\ as the only escapes."""
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


# The highest port a Redis Cluster node may listen on: its cluster bus listens
# on port + 10000 (no --cluster-port is given), which must be a port too;
# redis-server refuses to start above it.
CLUSTER_PORT_MAX = 65535 - 10000

# The one test launcher (tests/support/pathlock-testenv; tests/README.md):
# $PATHLOCK_TESTENV, else the one of this source tree.
TESTENV = os.environ.get("PATHLOCK_TESTENV") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "support", "pathlock-testenv")


def free_port(cluster=False):
    """A loopback port that was free a moment ago (the OS's choice), for a
    test that needs a port nobody listens on (servers get theirs from the
    launcher). With cluster, one <= CLUSTER_PORT_MAX (drawn again while the
    OS gives one above it: a socket bound without SO_REUSEADDR gets one from
    the whole ephemeral range, often 32768-60999)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not cluster or port <= CLUSTER_PORT_MAX:
            return port


class TestEnv:
    """The launcher as a child process: `pathlock-testenv KIND OPTIONS -- ARGS`
    started, its JSON line read (.info: ports, pids, urls, dirs; .url,
    .port), stopped by closing its stdin (it stops its servers and removes
    their directory). command(line) sends one stdin command (`restart NAME
    [ARG...]`, `stop NAME`) and returns its JSON answer. The launcher's
    error, when it cannot start them, is on stderr (inherited)."""

    __test__ = False  # not a pytest class

    def __init__(self, kind, *options, args=()):
        argv = [sys.executable, TESTENV, kind, *options, "--", *args]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            status = self.proc.wait()
            raise RuntimeError(f"pathlock-testenv {kind} did not start its servers (exit {status}; see stderr)")
        self.info = json.loads(line)
        self.url, self.port = self.info["url"], self.info["port"]

    def server(self, name):
        """The JSON line's entry of server `name` (its port, pid, dir, log)."""
        return next(s for s in self.info["servers"] if s["name"] == name)

    def command(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline() or "{}")
        if "error" in answer or not answer:
            raise RuntimeError(f"pathlock-testenv: {line}: {answer.get('error', 'no answer')}")
        return answer

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(PATIENCE_S)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                self.proc.wait()
        self.proc.stdout.close()


class Resp:
    """Just enough RESP2 to send a command and read its reply (no pipelining)."""

    def __init__(self, port, timeout=PATIENCE_S):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def __call__(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self._reply()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RespError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise ConnectionError(f"unexpected RESP reply {line!r}")


class RespError(str):
    """An error reply (returned, not raised, so a test can look at it)."""


class RedisServer(TestEnv):
    """A real redis-server from the launcher (`pathlock-testenv redis`):
    `extra` arguments; with tls_dir (make_test_certs.sh's files) also a TLS
    port, .tls_port. restart(extra) starts it again on the same port and
    directory; .pid is its process id now."""

    def __init__(self, extra=(), tls_dir=None):
        super().__init__("redis", *(["--tls-dir", tls_dir] if tls_dir else []), args=extra)
        self.pid = self.info["pid"]
        self.tls_port = self.info["servers"][0].get("tls_port")

    def restart(self, extra=()):
        """Stops the server and starts it again on its port and directory with
        `extra` arguments (e.g. the same persistence, so its data is reloaded)."""
        self.pid = self.command(shlex.join(["restart", "redis", *extra]))["pid"]


class Library:
    """The loaded pathlock library's functions, called as a client calls them
    (docs/lua-protocol.md): the one library whose functions include `fn`
    (its prefix read from FUNCTION LIST), on a namespace's keys (the pattern
    and suffixes of its contract). For what a driver's line protocol cannot
    do, such as an operator's set_limits."""

    def __init__(self, redis, fn="contract"):
        self.redis = redis
        prefixes = set()
        for lib in redis("FUNCTION", "LIST", "LIBRARYNAME", "pathlock_v4_*"):
            fields = dict(zip(lib[::2], lib[1::2]))
            for f in fields[b"functions"]:
                name = dict(zip(f[::2], f[1::2]))[b"name"].decode()
                if name.endswith("_" + fn):
                    prefixes.add(name[:-len(fn)])
        assert len(prefixes) == 1, f"want one loaded pathlock library with the function {fn}, found {sorted(prefixes)}"
        self.prefix = prefixes.pop()
        r = redis("FCALL_RO", self.prefix + "contract", "0")
        assert isinstance(r, list) and r[0] == b"contract", r
        self.contract = json.loads(r[1])

    def keys(self, ns):
        k = self.contract["keys"]
        return [k["pattern"].replace("{NS}", "{" + ns + "}").replace("<suffix>", s) for s in k["suffixes"]]

    def __call__(self, fn, ns, *args, read_only=False):
        """FCALL (FCALL_RO) of function fn on namespace ns's keys: the reply, bulk strings decoded."""
        keys = self.keys(ns)
        r = self.redis("FCALL_RO" if read_only else "FCALL", self.prefix + fn, len(keys), *keys, *args)
        return [v.decode() if isinstance(v, bytes) else v for v in r] if isinstance(r, list) else r


class DriverGone(AssertionError):
    pass


class Driver:
    """One driver process: a command line in, one JSON object per line out."""

    def __init__(self, argv, url, ns, extra=()):
        self.argv = list(argv) + ["--redis", url, "--namespace", ns] + list(extra)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines), daemon=True).start()
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    @staticmethod
    def _pump(stream, q):
        for line in iter(stream.readline, b""):
            q.put(line)
        q.put(None)

    def _drain(self):
        for line in iter(self.proc.stderr.readline, b""):
            self.stderr.append(line.decode("utf-8", "replace"))

    def send(self, line):
        data = line if isinstance(line, bytes) else line.encode("utf-8")
        try:
            self.proc.stdin.write(data + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:  # it ended before reading the line: say how, with what it wrote to stderr
            status = self.proc.wait(timeout=PATIENCE_S)
            self._drainer.join(timeout=PATIENCE_S)  # (its stderr, read to the end)
            raise DriverGone(f"{self.argv[0]} ended (exit {status}) before reading {data[:200]!r}: "
                             f"{''.join(self.stderr)[-2000:]}") from None

    def answer(self, patience=PATIENCE_S):
        try:
            line = self.lines.get(timeout=patience)
        except queue.Empty:
            raise DriverGone(f"{self.argv[0]}: no answer within {patience} s") from None
        if line is None:
            raise DriverGone(f"{self.argv[0]} ended (exit {self.proc.poll()}): {''.join(self.stderr)[-2000:]}")
        try:
            value = json.loads(line)
        except ValueError:
            raise AssertionError(f"not one JSON object per line: {line!r}") from None
        assert isinstance(value, dict), f"not a JSON object: {line!r}"
        return value

    def pending(self):
        """Is an answer already there (without waiting)?"""
        return not self.lines.empty()

    def ask(self, line, patience=PATIENCE_S):
        self.send(line)
        return self.answer(patience)

    def close(self):
        """End of input: the driver must exit with status 0."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(PATIENCE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise DriverGone(f"{self.argv[0]} did not exit at end of input")


def driver_argv(text):
    return shlex.split(text)


def acquire_line(owner, op, targets, extra=""):
    """`acquire OWNER OP PATH [DST_PATH] ...` with every word quoted; targets in role order."""
    paths = " ".join(quote(p) for p in targets.values())
    return f"acquire {quote(owner)} {op} {paths} {extra}".rstrip()


def answers(d, grant, *lines):
    """The answers of driver d to `lines` about one grant, asked in order: in
    each line {id} stands for the grant's id and {proof} for its id and
    quoted token (`release {proof}`, `force-release {id}`)."""
    proof = f"{grant['id']} {quote(grant['token'])}"
    return [d.ask(line.format(id=grant["id"], proof=proof)) for line in lines]


def wait_until(what, check, patience=PATIENCE_S):
    """Polls check() until it is true (a sync point on observable state, not a timed assertion)."""
    deadline = time.monotonic() + patience
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.01)
