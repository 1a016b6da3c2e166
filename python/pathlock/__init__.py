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
import contextlib
import functools
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
    ListPage,
    LockInfo,
    Matrix,
    MatrixError,
    MemoryEngine,
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
    """

    def __init__(self, result: AcquireResult) -> None:
        self.result = result
        super().__init__(repr(result))

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

Raises LockRefused when refused (after waiting `wait` seconds), and what acquire raises."""


async def _acquire_async(self: Engine, ns: str, owner: str, op: str, targets: Targets, *, ttl: float = 30.0,
                         wait: float = 0.0, fair: bool = True, reenter: Optional[Grant] = None,
                         idempotency_key: Optional[str] = None) -> AcquireResult:
    """acquire() for asyncio: runs in the loop's default executor, so waiting never blocks the event loop."""
    loop = asyncio.get_running_loop()
    call = functools.partial(self.acquire, ns, owner, op, targets, ttl=ttl, wait=wait, fair=fair,
                             reenter=reenter, idempotency_key=idempotency_key)
    return await loop.run_in_executor(None, call)


async def _release_async(self: Engine, ns: str, id: str, token: str) -> bool:
    """release() for asyncio, in the loop's default executor."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, self.release, ns, id, token)


@contextlib.asynccontextmanager
async def _lock_async(self: Engine, ns: str, owner: str, op: str, targets: Targets, **kwargs: Any):
    """`async with engine.lock_async(...) as grant:`: lock() for asyncio."""
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
Engine.lock_async = _lock_async

__all__ = [
    "AcquireResult", "BackendError", "Blocker", "BlockersPage", "Conflict", "Engine", "Grant", "InvalidRequest",
    "Lease", "LeaseKeeper", "ListPage", "LockInfo", "LockRefused", "Matrix", "MatrixError", "MemoryEngine",
    "WaiterInfo", "normalize_path", "__version__",
] + (["RedisEngine"] if "RedisEngine" in globals() else [])
