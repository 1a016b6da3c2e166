#!/usr/bin/env python3
"""The conformance kit's driver for the Python package (docs/clients.md):
`pathlock shell`'s line protocol on stdin/stdout over `import pathlock`.

    python_driver.py --redis URL --namespace NS [--matrix FILE]

The Python API names no roles per operation, so the driver reads them from
the matrix file: --matrix FILE, else PATHLOCK_MATRIX_FILE, else the shipped
matrix of this source tree. It re-enters only locks granted in this process
(pathlock.Grant has no constructor); for any other id and token it answers
not_holder when they name no live lock and an error otherwise."""
import argparse
import json
import os
import queue
import sys
import threading
import time

import pathlock

HERE = os.path.dirname(os.path.abspath(__file__))
SHIPPED = os.path.join(HERE, "..", "..", "..", "matrix", "cloud-drive.json")
MAX_LIST, MAX_BLOCKERS, MAX_WAITERS = 10000, 1000, 1000


class Bad(Exception):
    """Bad input: answered {"error": ...}."""


def split_words(line):
    """Words separated by spaces or tabs; "..." with \\" and \\\\ as the only escapes. -> [(word, quoted)]"""
    words, i, n = [], 0, len(line)
    while True:
        while i < n and line[i] in " \t":
            i += 1
        if i == n:
            return words
        if line[i] != '"':
            start = i
            while i < n and line[i] not in " \t":
                i += 1
            words.append((line[start:i], False))
            continue
        i, word = i + 1, []
        while True:
            if i == n:
                raise Bad("unterminated quote")
            c = line[i]
            i += 1
            if c == '"':
                break
            if c == "\\":
                if i == n or line[i] not in '"\\':
                    raise Bad('in a quoted word, a backslash must be followed by " or \\')
                c = line[i]
                i += 1
            word.append(c)
        if i < n and line[i] not in " \t":
            raise Bad("a closing quote must end the word")
        words.append(("".join(word), True))


def whole(word, skip, lo, hi):
    text = word[skip:]
    if not text.isdigit() or not text.isascii() or not lo <= int(text) <= hi:
        raise Bad(f"'{word}' needs a whole number from {lo} to {hi}")
    return int(text)


def ms(seconds):
    return int(round(seconds * 1000))


def raw(path):
    """A path as the engine takes it: bytes where the line held bytes that are not UTF-8."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape")


class Waiting:
    """The acquire that waits now, which a `cancel` line read meanwhile stops (as the C++ shell does)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stop = None

    def begin(self):
        with self._lock:
            self._stop = pathlock.StopSource()
            return self._stop

    def end(self):
        """True when a `cancel` stopped it."""
        with self._lock:
            stop, self._stop = self._stop, None
            return stop.stop_requested

    def cancel(self):
        with self._lock:
            return self._stop is not None and self._stop.request_stop()


class TimedOut(Exception):
    """A call with deadline=MS that gave up at its deadline."""


class Driver:
    def __init__(self, engine, ns, roles, open_engine=None):
        self.engine, self.ns, self.roles = engine, ns, roles
        self.open_engine = open_engine  # command_timeout (s) -> a RedisEngine with that command timeout
        self.within = {}  # deadline ms -> its engine
        self.waiting = Waiting()
        self.keeper = pathlock.LeaseKeeper(engine)  # keep, kept, unkeep
        self.kept = {}  # lock id -> its pathlock.Lease

    def engine_for(self, o):
        """The engine of a call: with deadline=MS, one whose command timeout is MS (the C++ client's
        per-call deadline, which it sends as deadline_ms)."""
        if "deadline=" not in o:
            return self.engine
        n = whole("deadline=" + o["deadline="], 9, 1, 604800000)
        if n not in self.within:
            self.within[n] = self.open_engine(n / 1000)
        return self.within[n]

    def deadlined(self, o, call):
        """call(engine) with the engine of deadline=MS; a backend error at that deadline is TimedOut."""
        start = time.monotonic()
        try:
            return call(self.engine_for(o))  # a new engine connects within the deadline too
        except pathlock.BackendError as e:
            if "deadline=" in o and time.monotonic() - start >= 0.9 * int(o["deadline="]) / 1000:
                raise TimedOut(str(e)) from e
            raise

    def targets(self, op, paths):
        if op not in self.roles:
            raise Bad(f"unknown operation '{op}'")
        roles = self.roles[op]
        if len(paths) != len(roles):
            raise Bad(f"operation '{op}' takes {len(roles)} path(s), got {len(paths)}")
        return [(r, raw(p)) for r, p in zip(roles, paths)]

    def answer(self, words):
        cmd, args = words[0][0], words[1:]
        handler = getattr(self, "cmd_" + cmd.replace("-", "_"), None)  # quoted or not (docs/cli.md#quoting)
        if handler is None:
            raise Bad(f"unknown command '{cmd}' (acquire, convert, release, renew, held, locks, force-release, "
                      "blockers, waiters, hello, cancel, keep, kept, unkeep)")
        return handler(args)

    def cmd_hello(self, args):
        if args:
            raise Bad("usage: hello")
        return {"client": "pathlock-python", "version": pathlock.__version__,
                "features": ["cancel", "blockers", "waiters", "matrix", "deadline", "keep", "convert"]}

    def _options(self, args, names):
        """Splits option words (name=value, unquoted) from positional words; each option once."""
        opts, positional = {}, []
        for word, quoted in args:
            name = word.split("=", 1)[0] + "=" if "=" in word else None
            if not quoted and name in names:
                if name in opts:
                    raise Bad(f"{name} is given twice")
                if name in ("reenter=", "token=", "key=") and word == name:
                    raise Bad(f"{name} needs a value")
                opts[name] = word[len(name):]
            else:
                positional.append(word)
        return opts, positional

    def cmd_acquire(self, args):
        o, pos = self._options(args, ("ttl=", "wait=", "fair=", "reenter=", "token=", "key=", "deadline="))
        if len(pos) not in (3, 4):
            raise Bad("usage: acquire OWNER OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false] "
                      "[reenter=ID token=TOKEN] [key=IDEMPOTENCY_KEY] [deadline=MS]")
        if o.get("fair=", "true") not in ("true", "false"):
            raise Bad("fair= takes true or false")
        if ("reenter=" in o) != ("token=" in o):
            raise Bad("reenter=ID and token=TOKEN come together")
        kw = {"ttl": whole("ttl=" + o.get("ttl=", "30000"), 4, 0, 10**15) / 1000,
              "wait": whole("wait=" + o.get("wait=", "0"), 5, 0, 10**15) / 1000,
              "fair": o.get("fair=", "true") == "true", "idempotency_key": o.get("key=")}
        targets = self.targets(pos[1], pos[2:])
        if "reenter=" in o:  # the engine checks the whole request, then the proof
            kw["reenter"] = pathlock.Grant(o["reenter="], o["token="])
        r = self.deadlined(o, lambda engine: self.acquire_stoppable(engine, pos[0], pos[1], targets, kw))
        return result_json(r)

    def cmd_convert(self, args):
        o, pos = self._options(args, ("ttl=", "wait=", "fair=", "key="))
        if len(pos) not in (4, 5):
            raise Bad("usage: convert ID TOKEN OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false] "
                      "[key=IDEMPOTENCY_KEY]")
        if o.get("fair=", "true") not in ("true", "false"):
            raise Bad("fair= takes true or false")
        kw = {"ttl": whole("ttl=" + o.get("ttl=", "30000"), 4, 0, 10**15) / 1000,
              "wait": whole("wait=" + o.get("wait=", "0"), 5, 0, 10**15) / 1000,
              "fair": o.get("fair=", "true") == "true", "idempotency_key": o.get("key=")}
        lock = pathlock.Grant(pos[0], pos[1])
        return result_json(self.engine.convert(self.ns, lock, pos[2], self.targets(pos[2], pos[3:]), **kw))

    def acquire_stoppable(self, engine, owner, op, targets, kw):
        """engine.acquire, stoppable by a `cancel` line when it waits; None when a cancel came after a grant
        (which is released: `cancelled` always means nothing is held)."""
        if kw["wait"] <= 0:
            return engine.acquire(self.ns, owner, op, targets, **kw)
        stop = self.waiting.begin()
        try:
            r = engine.acquire(self.ns, owner, op, targets, stop=stop, **kw)
        finally:
            stopped = self.waiting.end()
        if stopped and r.granted:
            self.engine.release(self.ns, r.grant.id, r.grant.token)
            return None
        return r

    def _exactly(self, args, n, usage):
        if len(args) != n:
            raise Bad(f"usage: {usage}")
        return [w for w, _ in args]

    def cmd_release(self, args):
        rid, token = self._exactly(args, 2, "release ID TOKEN")
        self.forget(rid)  # a released lock is no longer kept (nor lost)
        return {"released": self.engine.release(self.ns, rid, token)}

    @staticmethod
    def _proof(cmd, args, option):
        """ID and TOKEN, the first two words whatever they hold, and the value of one unquoted `option`
        (ttl= of renew, deadline= of held) that may follow them."""
        o = {}
        if len(args) == 3 and not args[2][1] and args[2][0].startswith(option):
            o[option] = args[2][0][len(option):]
            args = args[:2]
        if len(args) != 2:
            raise Bad(f"usage: {cmd} ID TOKEN [{option}MS]")
        return args[0][0], args[1][0], o

    def cmd_held(self, args):
        rid, token, o = self._proof("held", args, "deadline=")
        return {"held": self.deadlined(o, lambda engine: engine.is_held(self.ns, rid, token))}

    def cmd_force_release(self, args):
        (rid,) = self._exactly(args, 1, "force-release ID")
        return {"released": self.engine.force_release(self.ns, rid)}

    def cmd_renew(self, args):
        rid, token, o = self._proof("renew", args, "ttl=")
        ttl = whole("ttl=" + o["ttl="], 4, 0, 10**15) / 1000 if "ttl=" in o else None
        return {"renewed": self.engine.renew(self.ns, rid, token, ttl=ttl)}

    def cmd_keep(self, args):
        """keep ID TOKEN ttl=MS: renews now (as renew ... ttl=MS), then the LeaseKeeper keeps it."""
        if len(args) != 3 or args[2][1] or not args[2][0].startswith("ttl="):
            raise Bad("usage: keep ID TOKEN ttl=MS")
        (rid, _), (token, _), (word, _) = args
        ttl = whole("ttl=" + word[4:], 4, 0, 10**15) / 1000
        if not self.engine.renew(self.ns, rid, token, ttl=ttl):
            return {"keeping": False}
        self.forget(rid)
        self.kept[rid] = self.keeper.keep(self.ns, pathlock.Grant(rid, token, expires_in=ttl), ttl)
        return {"keeping": True}

    def cmd_kept(self, args):
        (rid,) = self._exactly(args, 1, "kept ID")
        lease = self.kept.get(rid)
        lost = lease is not None and lease.lost
        return {"keeping": lease is not None and not lost, "lost": lost}

    def cmd_unkeep(self, args):
        (rid,) = self._exactly(args, 1, "unkeep ID")
        return {"unkept": self.forget(rid)}

    def forget(self, rid):
        """Stops keeping lock rid; True when it was kept (or lost)."""
        lease = self.kept.pop(rid, None)
        if lease is not None:
            self.keeper.stop(lease)
        return lease is not None

    def cmd_locks(self, args):
        o, pos = self._options(args, ("limit=", "after="))
        if len(pos) > 1:
            raise Bad("usage: locks [PREFIX] [limit=N] [after=CURSOR]")
        prefix = raw(pos[0]) if pos else "/"
        if "limit=" not in o:
            if "after=" in o:
                raise Bad("after= needs limit=")
            return {"locks": [lock_json(l) for l in self.engine.list(self.ns, prefix)]}
        if o.get("after=") == "":
            raise Bad('after= needs a cursor: the "next" of the previous page')
        page = self.engine.list_page(self.ns, prefix, whole("limit=" + o["limit="], 6, 1, MAX_LIST),
                                     o.get("after=", ""))
        return {"locks": [lock_json(l) for l in page.locks], "next": page.next or None}

    def cmd_blockers(self, args):
        """blockers OP PATH [DST_PATH] [fair=] [limit=] [converts=ID]: with converts=, the dry run of a
        conversion of lock ID (Engine.blockers(..., converts=ID, fair=...): fair=false asks the held locks
        only); without it, fair=false leaves the places in line out of the answer."""
        o, pos = self._options(args, ("limit=", "fair=", "converts="))
        if len(pos) not in (2, 3):
            raise Bad("usage: blockers OP PATH [DST_PATH] [fair=true|false] [limit=N] [converts=ID]")
        if o.get("fair=", "true") not in ("true", "false"):
            raise Bad("fair= takes true or false")
        limit = whole("limit=" + o.get("limit=", str(MAX_BLOCKERS)), 6, 1, MAX_BLOCKERS)
        fair = o.get("fair=", "true") == "true"
        targets = self.targets(pos[0], pos[1:])
        if "converts=" in o:
            page = self.engine.blockers(self.ns, pos[0], targets, limit, converts=o["converts="], fair=fair)
        else:
            page = self.engine.blockers(self.ns, pos[0], targets, limit)
        return {"blockers": [blocker_json(b) for b in page.blockers if fair or not b.queued],
                "truncated": page.truncated}

    def cmd_waiters(self, args):
        o, pos = self._options(args, ("limit=",))
        if len(pos) > 1:
            raise Bad("usage: waiters [PREFIX] [limit=N]")
        limit = whole("limit=" + o.get("limit=", str(MAX_WAITERS)), 6, 1, MAX_WAITERS)
        return {"waiters": [waiter_json(w) for w in self.engine.waiters(self.ns, raw(pos[0]) if pos else "/", limit)]}


def result_json(r):
    """An acquire's or a conversion's result (None: cancelled after a grant, which was released)."""
    if r is None or r.cancelled:
        return {"granted": False, "cancelled": True}
    if r.not_holder:
        return {"granted": False, "not_holder": True}
    if r.over_limit is not None:
        o = r.over_limit
        return {"granted": False, "over_limit": {"limit": o.limit, "max": o.max, "count": o.count}}
    if not r.granted:
        c = r.conflict
        out = {"granted": False, "conflict": {
            "id": c.id, "op": c.op, "role": c.role, "path": c.path, "owner": c.owner,
            "expires_in_ms": ms(c.expires_in), "requested_role": c.requested_role,
            "requested_path": c.requested_path, "relation": c.relation, "queued": c.queued}}
        if r.would_deadlock:
            out["would_deadlock"] = True
        return out
    g = r.grant
    return {"granted": True, "id": g.id, "token": g.token, "fence": g.fence, "holds": g.holds,
            "expires_in_ms": ms(g.expires_in)}


def waiter_json(w):
    out = {"id": w.id, "owner": w.owner, "op": w.op, "targets": dict(w.targets), "waited_ms": ms(w.waited),
           "expires_in_ms": ms(w.expires_in)}
    if w.converts:
        out["converts"] = w.converts
    return out


def lock_json(l):
    return {"id": l.id, "owner": l.owner, "op": l.op, "targets": dict(l.targets), "fence": l.fence,
            "holds": l.holds, "expires_in_ms": ms(l.expires_in)}


def blocker_json(b):
    return {"kind": "waiter" if b.queued else "lock", "queued": b.queued, "id": b.id, "owner": b.owner, "op": b.op, "role": b.role, "path": b.path,
            "requested_role": b.requested_role, "requested_path": b.requested_path, "relation": b.relation,
            "fence": b.fence, "holds": b.holds, "expires_in_ms": ms(b.expires_in), "waited_ms": ms(b.waited)}


def is_cancel(line):
    return line.strip(" \t") == "cancel"


def answer_line(driver, line, cancelled=None):
    if "\r" in line:
        return {"error": "the line holds a carriage return (CR): lines end with LF alone, not CRLF"}
    stripped = line.lstrip(" \t")
    if not stripped or stripped.startswith("#"):
        return None
    if is_cancel(line):
        return {"cancelled": bool(cancelled)}
    try:
        return driver.answer(split_words(line))
    except TimedOut as e:
        return {"error": str(e), "timed_out": True}
    except (Bad, pathlock.InvalidRequest, pathlock.BackendError) as e:
        return {"error": str(e)}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--redis", required=True)
    p.add_argument("--namespace", default="default")
    p.add_argument("--matrix")
    a = p.parse_args()  # a bad command line exits 2
    matrix_file = a.matrix or os.environ.get("PATHLOCK_MATRIX_FILE") or SHIPPED
    with open(matrix_file, encoding="utf-8") as f:
        roles = {o["op"]: [r["role"] for r in o["roles"]] for o in json.load(f)["operations"]}
    matrix = pathlock.Matrix.from_file(a.matrix) if a.matrix else None
    engine = pathlock.RedisEngine(a.redis, matrix=matrix)
    try:  # an invalid namespace ends the driver before it reads a line, with status 1 (docs/cli.md)
        engine.waiters(a.namespace, "/", 1)
    except pathlock.InvalidRequest as e:
        sys.exit(f"python_driver.py: {e}")
    driver = Driver(engine, a.namespace, roles,
                    lambda timeout: pathlock.RedisEngine(a.redis, matrix=matrix, command_timeout=timeout))
    lines = queue.Queue()

    def read():  # reads ahead, so that a `cancel` line stops the acquire that waits now
        for data in open(sys.stdin.fileno(), "rb", closefd=False):
            line = data.decode("utf-8", "surrogateescape").rstrip("\n")
            lines.put((line, driver.waiting.cancel() if is_cancel(line) else None))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    while (item := lines.get()) is not None:
        line, cancelled = item
        reply = answer_line(driver, line, cancelled)
        if reply is not None:
            text = json.dumps(reply, ensure_ascii=False) + "\n"
            sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode())
            sys.stdout.buffer.flush()
    driver.keeper.close()  # end of input: no lock is kept any longer


if __name__ == "__main__":
    main()
