# Type stubs of the extension module pathlock._pathlock (clients/python/src/module.cpp).
# Durations are seconds. Targets: {role: path} or [(role, path), ...].
from typing import AsyncContextManager, Callable, ContextManager, List, Mapping, Optional, Sequence, Tuple, Union

_Targets = Union[Mapping[str, str], Sequence[Tuple[str, str]]]

__version__: str

class InvalidRequest(ValueError): ...
class BackendError(ConnectionError): ...

class MatrixError(InvalidRequest):
    problems: List[str]

class Grant:
    # Read-only attributes of a granted lock.
    id: str
    token: str
    fence: int
    expires_in: float  # seconds of lease left when granted
    holds: int
    def __init__(self, id: str, token: str, expires_in: float = 0.0) -> None: ...

class Conflict:
    id: str
    op: str
    role: str
    path: str
    owner: str
    expires_in: float
    requested_role: str
    requested_path: str
    relation: str  # 'same' | 'held_ancestor' | 'held_descendant'
    queued: bool

class AcquireResult:
    @property
    def granted(self) -> bool: ...
    @property
    def grant(self) -> Optional[Grant]: ...
    @property
    def conflict(self) -> Optional[Conflict]: ...
    @property
    def not_holder(self) -> bool: ...
    @property
    def cancelled(self) -> bool: ...
    @property
    def would_deadlock(self) -> bool: ...
    def __bool__(self) -> bool: ...

class StopSource:
    def __init__(self) -> None: ...
    def request_stop(self) -> bool: ...
    @property
    def stop_requested(self) -> bool: ...

class LockInfo:
    id: str
    owner: str
    op: str
    targets: List[Tuple[str, str]]
    fence: int
    holds: int
    expires_in: float

class ListPage:
    locks: List[LockInfo]
    next: str

class Blocker:
    queued: bool
    id: str
    owner: str
    op: str
    role: str
    path: str
    requested_role: str
    requested_path: str
    relation: str
    fence: int
    holds: int
    expires_in: float
    waited: float

class BlockersPage:
    blockers: List[Blocker]
    truncated: bool

class WaiterInfo:
    id: str
    owner: str
    op: str
    targets: List[Tuple[str, str]]
    waited: float
    expires_in: float
    converts: str

class Matrix:
    @staticmethod
    def from_file(path: str) -> Matrix: ...
    @property
    def name(self) -> str: ...
    @property
    def fingerprint(self) -> str: ...
    @property
    def operations(self) -> List[str]: ...

class Engine:
    @property
    def backend(self) -> str: ...
    @property
    def operations(self) -> List[str]: ...
    def acquire(self, ns: str, owner: str, op: str, targets: _Targets, *, ttl: float = 30.0, wait: float = 0.0,
                fair: bool = True, reenter: Optional[Grant] = None,
                idempotency_key: Optional[str] = None, stop: Optional[StopSource] = None) -> AcquireResult: ...
    def convert(self, ns: str, lock: Grant, op: str, targets: _Targets, *, ttl: float = 30.0, wait: float = 0.0,
                fair: bool = True, idempotency_key: Optional[str] = None,
                stop: Optional[StopSource] = None) -> AcquireResult: ...
    def release(self, ns: str, id: str, token: str) -> bool: ...
    def renew(self, ns: str, id: str, token: str, *, ttl: Optional[float] = None) -> bool: ...
    def is_held(self, ns: str, id: str, token: str) -> bool: ...
    def list(self, ns: str, prefix: str = "/") -> List[LockInfo]: ...
    def list_page(self, ns: str, prefix: str = "/", limit: int = 1000, after: str = "") -> ListPage: ...
    def blockers(self, ns: str, op: str, targets: _Targets, limit: int = 1000, *, converts: Optional[str] = None,
                 fair: bool = True) -> BlockersPage: ...
    def waiters(self, ns: str, prefix: str = "/", limit: int = 1000) -> List[WaiterInfo]: ...
    def force_release(self, ns: str, id: str) -> bool: ...
    # Added by pathlock/__init__.py (pure Python):
    def lock(self, ns: str, owner: str, op: str, targets: _Targets, *, ttl: float = 30.0, wait: float = 0.0,
             fair: bool = True, reenter: Optional[Grant] = None,
             idempotency_key: Optional[str] = None) -> "ContextManager[Grant]": ...
    async def acquire_async(self, ns: str, owner: str, op: str, targets: _Targets, *, ttl: float = 30.0,
                            wait: float = 0.0, fair: bool = True, reenter: Optional[Grant] = None,
                            idempotency_key: Optional[str] = None) -> AcquireResult: ...
    async def convert_async(self, ns: str, lock: Grant, op: str, targets: _Targets, *, ttl: float = 30.0,
                            wait: float = 0.0, fair: bool = True,
                            idempotency_key: Optional[str] = None) -> AcquireResult: ...
    async def release_async(self, ns: str, id: str, token: str) -> bool: ...
    def lock_async(self, ns: str, owner: str, op: str, targets: _Targets, *, ttl: float = 30.0,
                   wait: float = 0.0, fair: bool = True, reenter: Optional[Grant] = None,
                   idempotency_key: Optional[str] = None) -> "AsyncContextManager[Grant]": ...

def MemoryEngine(matrix: Optional[Matrix] = None) -> Engine: ...
def RedisEngine(url: str = "redis://127.0.0.1:6379", *, matrix: Optional[Matrix] = None,
                connect_timeout: float = 2.0, command_timeout: float = 2.0, pool_size: int = 4,
                replicas: int = 0, tls_ca_file: str = "", tls_ca_dir: str = "", tls_cert_file: str = "",
                tls_key_file: str = "", tls_server_name: str = "", tls_min_version: str = "",
                tls_insecure_skip_verify: bool = False) -> Engine: ...

class Lease:
    @property
    def ns(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def lost(self) -> bool: ...
    @property
    def renewals(self) -> int: ...

class LeaseKeeper:
    def __init__(self, engine: Engine, *, renew_after: float = ..., retry_interval: float = 0.1) -> None: ...
    def keep(self, ns: str, grant: Grant, ttl: float,
             on_lost: Optional[Callable[[str], object]] = None) -> Lease: ...
    def stop(self, lease: Lease) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> LeaseKeeper: ...
    def __exit__(self, *args: object) -> None: ...

def normalize_path(path: Union[str, bytes]) -> str: ...
