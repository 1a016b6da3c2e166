"""pathlock: path locks for file-management services.

The C++ engine of pathlock, bound for Python (one implementation: the same
engine, matrix and Redis protocol as the C++ services). Guide: docs/python.md.

    import pathlock
    engine = pathlock.MemoryEngine()              # or pathlock.RedisEngine("redis://127.0.0.1:6379")
    with engine.lock("project-42", "alice", "move_folder",
                     {"src": "/p/A/C", "dst": "/p/B"}, ttl=30, wait=5) as grant:
        ...  # move, passing grant.fence to storage writes

Durations (ttl, wait, expires_in, ...) are seconds. Bad input raises
InvalidRequest (a ValueError), a backend failure BackendError (a
ConnectionError), a refused `lock()` LockRefused.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import os
import threading
import time
from typing import Any, Iterator, Mapping, Optional, Sequence, Tuple, Union

from ._pathlock import (  # noqa: F401  (re-exported)
    AcquireResult,
    Blocker,
    BlockersPage,
    BackendError,
    Conflict,
    Engine,
    Grant,
    InvalidRequest,
    Lease,
    LeaseKeeper,
    LimitRefusal,
    Limits,
    LimitsStatus,
    ListPage,
    LockInfo,
    Matrix,
    MatrixError,
    MemoryEngine,
    StopSource,
    WaiterInfo,
    __version__,
    normalize_path,
)

try:
    from ._pathlock import RedisEngine  # noqa: F401  (absent in a build without Redis)
except ImportError:  # pragma: no cover
    pass

Targets = Union[Mapping[str, str], Sequence[Tuple[str, str]]]


class LockRefused(Exception):
    """Raised by Engine.lock() when the request is refused.

    `result` is the AcquireResult: its `conflict` names the held lock (or
    older waiter) that refused it, or `not_holder` is set for a reentry.
    str() says who holds what: "held move_folder by 'alice' on '/p/A' ...".
    """

    def __init__(self, result: AcquireResult) -> None:
        self.result = result
        if result.not_holder:
            text = "refused: the reentry's id and token name no live lock"
        elif result.over_limit is not None:
            o = result.over_limit
            text = f"refused: the namespace's limit on {o.limit} is {o.max} (now {o.count})"
        elif result.conflict is not None:
            text = f"refused: {result.conflict}"
        else:
            text = "refused"
        super().__init__(text)

    @property
    def conflict(self) -> Optional[Conflict]:
        return self.result.conflict


@contextlib.contextmanager
def _lock(self: Engine, ns: str, owner: str, op: str, targets: Targets, *, ttl: float = 30.0,
          wait: float = 0.0, fair: bool = True, reenter: Optional[Grant] = None,
          idempotency_key: Optional[str] = None) -> Iterator[Grant]:
    result = self.acquire(ns, owner, op, targets, ttl=ttl, wait=wait, fair=fair, reenter=reenter,
                          idempotency_key=idempotency_key)
    if not result.granted:
        raise LockRefused(result)
    try:
        yield result.grant
    finally:
        self.release(ns, result.grant.id, result.grant.token)


_lock.__doc__ = """Context manager: acquires, yields the Grant, releases on exit (also on an exception).

Raises LockRefused when refused (after waiting `wait` seconds), and what acquire raises. Ctrl-C during
the wait stops it and releases a grant that raced it (acquire's guarantee), so nothing stays held."""


class _Pools:
    """The binding's own threads for asyncio (docs/python.md#asyncio), never the loop's default executor.

    `calls`: calls that do not wait (the first attempt of every acquire, release, renew, ...): answered in
    about one round trip whatever waits. `waits`: acquires that wait, one thread each while they wait, at
    most `wait_threads` at once; more wait in arrival order for a thread, their deadline counting from the
    call. Both are made on first use, per process (a forked child makes its own).
    """

    call_threads = 4
    wait_threads = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._waits: Optional[concurrent.futures.ThreadPoolExecutor] = None

    def calls(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._calls is None:
                self._calls = concurrent.futures.ThreadPoolExecutor(self.call_threads, "pathlock-call")
            return self._calls

    def waits(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._waits is None:
                self._waits = concurrent.futures.ThreadPoolExecutor(self.wait_threads, "pathlock-wait")
            return self._waits

    def after_fork(self) -> None:
        # The parent's threads are not in the child: forget its pools (never shut them down here).
        self._lock = threading.Lock()
        self._calls = None
        self._waits = None


_pools = _Pools()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pools.after_fork)


def configure_asyncio(*, call_threads: Optional[int] = None, wait_threads: Optional[int] = None) -> None:
    """Sizes the binding's asyncio threads (defaults: 4 for calls, 64 for waiting acquires).

    Takes effect for pools not made yet: call it before the first *_async call of the process."""
    for name, value in (("call_threads", call_threads), ("wait_threads", wait_threads)):
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidRequest(f"{name}: must be a whole number >= 1, got {value!r}")
            setattr(_Pools, name, value)


async def _stoppable(pool: concurrent.futures.ThreadPoolExecutor, call: Any, stop: StopSource,
                     on_late_grant: Any) -> AcquireResult:
    """Runs `call` (an acquire given `stop`) on `pool`; a cancellation stops it and waits until it has
    left the line, releasing a grant that arrived anyway, then propagates."""
    job = pool.submit(call)
    try:
        return await asyncio.wrap_future(job)
    except BaseException:
        stop.request_stop()
        if not job.cancel():  # running or done: wait for its answer, whatever else is cancelled
            result = await _finish(job)
            if result is not None and result.granted:
                await _finish(_pools.calls().submit(on_late_grant, result.grant))
        raise


async def _finish(job: concurrent.futures.Future) -> Any:
    """The result of `job` (None if it raised), awaited through further cancellations."""
    waiting = asyncio.wrap_future(job)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(waiting)
            break
        except asyncio.CancelledError:
            if waiting.done():
                result = None if waiting.cancelled() or waiting.exception() else waiting.result()
                break
            cancelled = True
        except Exception:  # noqa: BLE001  (the job's own failure: nothing is held)
            result = None
            break
    if cancelled:
        asyncio.current_task().cancel()  # keep the later cancellation for the caller
    return result


async def _acquire_async(self: Engine, ns: str, owner: str, op: str, targets: Targets, *, ttl: float = 30.0,
                         wait: float = 0.0, fair: bool = True, reenter: Optional[Grant] = None,
                         idempotency_key: Optional[str] = None) -> AcquireResult:
    """acquire() for asyncio, on the binding's own threads (see _Pools), never the default executor.

    Cancelling the awaiting task (task.cancel(), asyncio.wait_for, asyncio.timeout, a TaskGroup) stops the
    wait: when CancelledError reaches the caller the request has left the line and nothing is held (a grant
    that raced the cancellation was released)."""
    if not isinstance(wait, (int, float)) or isinstance(wait, bool):
        raise InvalidRequest(f"wait: must be a number of seconds, got {wait!r}")
    deadline = time.monotonic() + wait

    def give_back(grant: Grant) -> None:
        self.release(ns, grant.id, grant.token)

    def attempt(stop: StopSource, waits: bool) -> AcquireResult:
        left = max(0.0, deadline - time.monotonic()) if waits else 0.0
        return self.acquire(ns, owner, op, targets, ttl=ttl, wait=left, fair=fair, reenter=reenter,
                            idempotency_key=idempotency_key, stop=stop)

    stop = StopSource()
    first = await _stoppable(_pools.calls(), functools.partial(attempt, stop, False), stop, give_back)
    if first.granted or first.not_holder or first.over_limit is not None or wait <= 0 or reenter is not None:
        return first
    stop = StopSource()
    return await _stoppable(_pools.waits(), functools.partial(attempt, stop, True), stop, give_back)


async def _convert_async(self: Engine, ns: str, lock: Grant, op: str, targets: Targets, *, ttl: float = 30.0,
                         wait: float = 0.0, fair: bool = True,
                         idempotency_key: Optional[str] = None) -> AcquireResult:
    """convert() for asyncio, on the binding's own threads (docs/design.md#conversion). Cancelling the
    awaiting task stops a waiting conversion: the lock is then as it was, unless the conversion was made
    before the stop reached it (it is never undone: `lock`'s id and token stay valid either way)."""
    if not isinstance(wait, (int, float)) or isinstance(wait, bool):
        raise InvalidRequest(f"wait: must be a number of seconds, got {wait!r}")

    def attempt(stop: StopSource) -> AcquireResult:
        return self.convert(ns, lock, op, targets, ttl=ttl, wait=wait, fair=fair,
                            idempotency_key=idempotency_key, stop=stop)

    stop = StopSource()
    pool = _pools.waits() if wait > 0 else _pools.calls()
    return await _stoppable(pool, functools.partial(attempt, stop), stop, lambda grant: None)


async def _release_async(self: Engine, ns: str, id: str, token: str) -> bool:
    """release() for asyncio, on the binding's call threads. Runs to the end even if the caller is
    cancelled meanwhile (the cancellation then propagates)."""
    job = _pools.calls().submit(self.release, ns, id, token)
    try:
        return await asyncio.wrap_future(job)
    except asyncio.CancelledError:
        await _finish(job)
        raise


@contextlib.asynccontextmanager
async def _lock_async(self: Engine, ns: str, owner: str, op: str, targets: Targets, **kwargs: Any):
    """`async with engine.lock_async(...) as grant:`: lock() for asyncio. Cancelled while waiting: nothing
    held; cancelled inside the block: released on the way out."""
    result = await _acquire_async(self, ns, owner, op, targets, **kwargs)
    if not result.granted:
        raise LockRefused(result)
    try:
        yield result.grant
    finally:
        await _release_async(self, ns, result.grant.id, result.grant.token)


Engine.lock = _lock
Engine.acquire_async = _acquire_async
Engine.release_async = _release_async
Engine.convert_async = _convert_async
Engine.lock_async = _lock_async

__all__ = [
    "AcquireResult", "BackendError", "Blocker", "BlockersPage", "Conflict", "Engine", "Grant", "InvalidRequest",
    "Lease", "LeaseKeeper", "LimitRefusal", "Limits", "LimitsStatus", "ListPage", "LockInfo", "LockRefused", "Matrix", "MatrixError", "MemoryEngine",
    "StopSource", "WaiterInfo", "configure_asyncio", "normalize_path", "__version__",
] + (["RedisEngine"] if "RedisEngine" in globals() else [])
