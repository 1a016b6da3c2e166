<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;
use Pathlock\Exception\LockRefusedException;
use Pathlock\Exception\TimeoutException;

/**
 * A client of the pathlock Redis protocol (docs/lua-protocol.md): every
 * call is one FCALL of a function of the loaded Functions library, so this
 * client shares locks, namespaces, lines and fences with the C++ engine and
 * every other client on the same server.
 *
 * It holds no global state: one instance per connection, as many as you
 * like. Not for use by several threads at once (neither is \Redis).
 */
final class LockEngine implements LockEngineInterface
{
    public const VERSION = '0.2.0';
    public const DEFAULT_TTL_MS = 30000;
    public const MAX_TTL_MS = 604800000;       // one week
    public const RECHECK_MS = 200;             // re-check period of a waiting acquire
    public const MAX_RESERVATION_MS = 2000;    // the library caps reservations at 2 s
    public const MAX_LIST_LIMIT = 10000;
    public const MAX_BLOCKERS = 1000;
    public const MAX_WAITERS = 1000;
    private const KEY_SUFFIXES = ['meta', 'idx', 'locks', 'exp', 'ent', 'wq', 'wexp', 'wrec', 'wake'];

    private ?Endpoint $wakeEndpoint;

    /**
     * @param \Redis $redis a connected phpredis client (calls go through it)
     * @param Library $library the Functions library to call (and to load where it is missing, when it has its text)
     * @param Endpoint|null $wakeEndpoint where to open wake-up subscriptions; default: the server $redis talks to
     */
    public function __construct(
        private readonly \Redis $redis,
        private readonly Library $library,
        ?Endpoint $wakeEndpoint = null,
    ) {
        $this->wakeEndpoint = $wakeEndpoint;
    }

    /**
     * Connects to `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]` (or `rediss://`).
     *
     * @param array<string,mixed> $tlsOptions PHP's SSL context options for `rediss://` (`cafile`, `local_cert`,
     *   `local_pk`, ...), used on the command connection and the wake-up subscription alike
     */
    public static function connect(
        string $url,
        Library $library,
        float $connectTimeout = 2.0,
        float $commandTimeout = 2.0,
        array $tlsOptions = [],
    ): self {
        $endpoint = Endpoint::fromUrl($url, $connectTimeout, $commandTimeout, $tlsOptions);
        return new self($endpoint->connect(), $library, $endpoint);
    }

    public function library(): Library
    {
        return $this->library;
    }

    /**
     * Loads the library on the server (FUNCTION LOAD without REPLACE; "already
     * exists" means this very text is there, which is success).
     */
    public function loadLibrary(): void
    {
        if ($this->library->code === null) {
            throw new BackendException(
                "the server lacks the library {$this->library->name}, and this client was configured by its function prefix only (give the library file to load it)",
            );
        }
        try {
            $this->redis->clearLastError();
            $r = $this->redis->rawCommand('FUNCTION', 'LOAD', $this->library->code);
        } catch (\RedisException $e) {
            throw new BackendException('redis: FUNCTION LOAD: ' . $e->getMessage(), 0, $e);
        }
        if ($r === false) {
            $err = (string) $this->redis->getLastError();
            if (!str_contains($err, 'already exists')) {
                throw new BackendException("redis: FUNCTION LOAD: $err");
            }
        }
    }

    /**
     * Takes every target of one request, or none.
     *
     * @param array<string,string>|list<string> $targets role => path, or the paths in the matrix's role order
     * @param int $waitMs how long to wait for a refused request (0: answer at once). The wait blocks, keeping a
     *   place in line when $fair; it ends granted or at the deadline, having left the line.
     * @param Grant|null $reenter a grant of yours to take once more (its id and token are the proof); never waits
     * @param string|null $idempotencyKey sent again with the same request after a lost reply, gets the same lock
     * @throws InvalidRequestException bad input; nothing was changed
     * @throws BackendException Redis failed; a waiting request has left the line
     */
    public function acquire(
        string $namespace,
        string $owner,
        string $op,
        array $targets,
        int $ttlMs = self::DEFAULT_TTL_MS,
        int $waitMs = 0,
        bool $fair = true,
        ?Grant $reenter = null,
        ?string $idempotencyKey = null,
        ?Cancellation $cancellation = null,
    ): AcquireResult {
        $this->checkAcquire($namespace, $owner, $ttlMs, $waitMs, $reenter, $idempotencyKey);
        $paths = $this->resolveTargets($op, $targets);
        $inLine = $fair && $waitMs > 0 && $reenter === null;
        $waiter = $inLine ? 'w' . bin2hex(random_bytes(12)) : '';
        $args = [
            $owner, $op, (string) $ttlMs,
            bin2hex(random_bytes(12)), bin2hex(random_bytes(16)),   // new id and token (used only by a grant)
            $reenter?->id ?? '', $reenter?->token ?? '', $idempotencyKey ?? '',
            ...$paths,
            $fair ? '1' : '0', $waiter, '0',
        ];
        if ($waitMs === 0 || $reenter !== null) {
            return $this->attempt($namespace, $args);   // one attempt, no place in line
        }
        try {
            return $this->wait($namespace, $args, $paths, self::nowMs() + $waitMs, $waiter, $cancellation);
        } catch (\Throwable $e) {
            if ($inLine) {
                try {
                    $this->leave($namespace, $waiter);
                } catch (\Throwable) {
                    // best effort: the reservation ends within 2 s anyway
                }
            }
            throw $e;
        }
    }

    /** acquire()'s input checks, before Redis is called. */
    private function checkAcquire(string $namespace, string $owner, int $ttlMs, int $waitMs, ?Grant $reenter, ?string $idempotencyKey): void
    {
        self::checkNamespace($namespace);
        self::checkOwner($owner);
        if ($ttlMs < 1 || $ttlMs > self::MAX_TTL_MS) {
            throw new InvalidRequestException(sprintf('ttl %d ms is outside 1..%d ms', $ttlMs, self::MAX_TTL_MS));
        }
        if ($waitMs < 0 || $waitMs > self::MAX_TTL_MS) {
            throw new InvalidRequestException(sprintf('wait %d ms is outside 0..%d ms', $waitMs, self::MAX_TTL_MS));
        }
        if ($reenter !== null) {
            self::checkId($reenter->id, 'reenter_id');
            self::checkToken($reenter->token, 'reenter_token');
            if ($idempotencyKey !== null && $idempotencyKey !== '') {
                throw new InvalidRequestException('a reentry (reenter_id) takes no idempotency_key: the lock it proves is already known');
            }
        }
        if ($idempotencyKey !== null) {
            self::checkIdempotencyKey($idempotencyKey);
        }
    }

    /**
     * The waiting part of acquire() (docs/php.md "Waiting"): attempts until
     * granted, the deadline, or the cancellation; a fair request ($waiter
     * not '') keeps its place in line meanwhile. The caller leaves the line
     * when this throws.
     *
     * @param list<string> $args the acquire call's arguments; the last one is reserve_ms
     * @param list<string> $paths
     */
    private function wait(string $namespace, array $args, array $paths, float $deadline, string $waiter, ?Cancellation $cancellation): AcquireResult
    {
        $last = count($args) - 1;
        $sub = null;
        $waited = false;
        try {
            while (true) {
                $left = (int) ceil($deadline - self::nowMs());
                $final = $left <= 0;   // a refusal now is the answer
                // The reservation outlasts the deadline by one re-check, so the
                // last attempt still finds its own place.
                $args[$last] = (string) ($final || $waiter === '' ? 0 : min($left + self::RECHECK_MS, self::MAX_RESERVATION_MS));
                $out = $this->attempt($namespace, $args);
                if ($out->grant !== null && $waited && $cancellation?->isCancelled()) {
                    // a grant that raced the cancellation: given back, never dropped
                    $this->release($namespace, $out->grant->id, $out->grant->token);
                    return AcquireResult::cancelled();
                }
                if ($out->conflict === null || $final) {
                    return $out;
                }
                if (!$waited || ($sub !== null && $sub->isBroken())) {
                    // Subscribe (again), then look again at once: a removal between
                    // the attempt and the subscription would be missed.
                    $waited = true;
                    $sub?->close();
                    $sub = $this->subscribe($namespace);
                    continue;
                }
                $now = self::nowMs();
                $until = min($deadline, $now + self::RECHECK_MS, $now + $out->conflict->expiresInMs + 1);
                if ($this->sleepUntil($until, $sub, $paths, $cancellation) || $cancellation?->isCancelled()) {
                    if ($waiter !== '') {
                        $this->leave($namespace, $waiter);
                    }
                    return AcquireResult::cancelled();
                }
            }
        } finally {
            $sub?->close();
        }
    }

    /**
     * acquire() as a guard: granted, or a LockRefusedException saying why
     * (LockConflictedException naming the conflict, after waiting $waitMs;
     * NotHolderException; AcquireCancelledException). Release it in
     * `finally`; its destructor releases it too.
     *
     * @param array<string,string>|list<string> $targets
     * @throws LockRefusedException|InvalidRequestException|BackendException
     */
    public function lock(
        string $namespace,
        string $owner,
        string $op,
        array $targets,
        int $ttlMs = self::DEFAULT_TTL_MS,
        int $waitMs = 0,
        bool $fair = true,
        ?Grant $reenter = null,
        ?string $idempotencyKey = null,
        ?Cancellation $cancellation = null,
    ): LockGuard {
        $r = $this->acquire($namespace, $owner, $op, $targets, $ttlMs, $waitMs, $fair, $reenter, $idempotencyKey, $cancellation);
        if ($r->grant === null) {
            throw LockRefusedException::fromResult($r);
        }
        return new LockGuard($this, $namespace, $r->grant);
    }

    /**
     * Runs $work(Grant) under the lock (every option of lock(): reentry,
     * idempotency key, cancellation) and releases it afterwards, whatever
     * happens; returns what $work returns.
     *
     * @template T
     * @param array<string,string>|list<string> $targets
     * @param callable(Grant): T $work
     * @return T
     */
    public function withLock(
        string $namespace,
        string $owner,
        string $op,
        array $targets,
        callable $work,
        int $ttlMs = self::DEFAULT_TTL_MS,
        int $waitMs = 0,
        bool $fair = true,
        ?Grant $reenter = null,
        ?string $idempotencyKey = null,
        ?Cancellation $cancellation = null,
    ): mixed {
        $guard = $this->lock($namespace, $owner, $op, $targets, $ttlMs, $waitMs, $fair, $reenter, $idempotencyKey, $cancellation);
        try {
            return $work($guard->grant);
        } finally {
            $guard->release();
        }
    }

    /** Drops one hold (the lock goes at zero); false when no live lock has this id and token. */
    public function release(string $namespace, string $id, string $token): bool
    {
        self::checkNamespace($namespace);
        self::checkId($id, 'id');
        self::checkToken($token, 'token');
        $r = $this->call('release', $namespace, [$id, $token]);
        return $r[0] === 'released';
    }

    /** The lease becomes now + ttl (or the lock's own TTL); false when the lock is gone. */
    public function renew(string $namespace, string $id, string $token, ?int $ttlMs = null): bool
    {
        self::checkNamespace($namespace);
        self::checkId($id, 'id');
        self::checkToken($token, 'token');
        if ($ttlMs !== null && ($ttlMs < 1 || $ttlMs > self::MAX_TTL_MS)) {
            throw new InvalidRequestException(sprintf('ttl %d ms is outside 1..%d ms', $ttlMs, self::MAX_TTL_MS));
        }
        $r = $this->call('renew', $namespace, [$id, $token, $ttlMs === null ? '' : (string) $ttlMs]);
        return $r[0] === 'renewed';
    }

    /** Still the holder? Read-only (FCALL_RO). */
    public function isHeld(string $namespace, string $id, string $token): bool
    {
        self::checkNamespace($namespace);
        self::checkId($id, 'id');
        self::checkToken($token, 'token');
        $r = $this->call('held', $namespace, [$id, $token], true);
        return (int) ($r[1] ?? 0) === 1;
    }

    /** Drops a lock whatever its holds, without its token (administrators). */
    public function forceRelease(string $namespace, string $id): bool
    {
        self::checkNamespace($namespace);
        self::checkId($id, 'id');
        $r = $this->call('force_release', $namespace, [$id]);
        return $r[0] === 'released';
    }

    /**
     * Every live lock with a target at or inside $prefix, by fence.
     *
     * @return list<LockInfo>
     */
    public function list(string $namespace, string $prefix = '/'): array
    {
        $out = [];
        $after = '';
        do {
            $page = $this->listPage($namespace, $prefix, self::MAX_LIST_LIMIT, $after);
            array_push($out, ...$page->locks);
            $after = $page->next;
        } while ($after !== '');
        return $out;
    }

    /** One page of list(): pass its `next` back as $after; '' on the last page. */
    public function listPage(string $namespace, string $prefix = '/', int $limit = 1000, string $after = ''): ListPage
    {
        self::checkNamespace($namespace);
        $prefix = self::resolvePrefix($prefix);
        if ($limit < 1 || $limit > self::MAX_LIST_LIMIT) {
            throw new InvalidRequestException(sprintf('limit %d is outside 1..%d', $limit, self::MAX_LIST_LIMIT));
        }
        if ($after !== '' && preg_match('/\A[0-9]{1,16}\z/', $after) !== 1) {
            throw new InvalidRequestException("cursor '$after' is not a cursor of this namespace (the \"next\" of a page)");
        }
        $r = $this->call('list', $namespace, [$prefix, (string) $limit, $after]);
        $locks = [];
        foreach (array_slice($r, 2) as $row) {
            $locks[] = new LockInfo(
                (string) $row[0],
                (string) $row[1],
                (string) $row[2],
                (int) $row[3],
                (int) $row[4],
                (int) $row[5],
                self::pairs($row[6]),
            );
        }
        return new ListPage($locks, (string) ($r[1] ?? ''));
    }

    /**
     * Why would a request for $op on $targets be refused now? Every live
     * held lock and place in line that refuses it; takes nothing.
     *
     * @param array<string,string>|list<string> $targets
     */
    public function blockers(string $namespace, string $op, array $targets, int $limit = self::MAX_BLOCKERS): BlockersPage
    {
        self::checkNamespace($namespace);
        $paths = $this->resolveTargets($op, $targets);
        if ($limit < 1 || $limit > self::MAX_BLOCKERS) {
            throw new InvalidRequestException(sprintf('limit %d is outside 1..%d', $limit, self::MAX_BLOCKERS));
        }
        $r = $this->call('blockers', $namespace, [$op, ...$paths, (string) $limit], true);
        $rows = [];
        foreach (array_slice($r, 2) as $b) {
            $rows[] = new Blocker(
                (int) $b[0] === 1,
                (string) $b[1],
                (string) $b[2],
                (string) $b[3],
                (string) $b[4],
                (string) $b[5],
                (string) $b[6],
                (string) $b[7],
                (string) $b[8],
                (int) $b[9],
                (int) $b[10],
                (int) $b[11],
                (int) $b[12],
            );
        }
        return new BlockersPage($rows, (int) ($r[1] ?? 0) === 1);
    }

    /**
     * The places in line with a path at or inside $prefix, oldest first.
     *
     * @return list<WaiterInfo>
     */
    public function waiters(string $namespace, string $prefix = '/', int $limit = self::MAX_WAITERS): array
    {
        self::checkNamespace($namespace);
        $prefix = self::resolvePrefix($prefix);
        if ($limit < 1 || $limit > self::MAX_WAITERS) {
            throw new InvalidRequestException(sprintf('limit %d is outside 1..%d', $limit, self::MAX_WAITERS));
        }
        $r = $this->call('waiters', $namespace, [$prefix, (string) $limit], true);
        $out = [];
        foreach (array_slice($r, 1) as $w) {
            $out[] = new WaiterInfo((string) $w[0], (string) $w[1], (string) $w[2], self::pairs($w[5]), (int) $w[3], (int) $w[4]);
        }
        return $out;
    }

    /** Takes a place out of the line (harmless when it is gone). */
    public function leave(string $namespace, string $waiterId): bool
    {
        self::checkNamespace($namespace);
        self::checkId($waiterId, 'waiter_id');
        $r = $this->call('leave', $namespace, [$waiterId]);
        return (int) ($r[1] ?? 0) === 1;
    }

    /** The nine keys of a namespace, in the order every function takes them. */
    public static function keys(string $namespace): array
    {
        return array_map(fn(string $s): string => "pl:{{$namespace}}:$s", self::KEY_SUFFIXES);
    }

    // --- internals -----------------------------------------------------------

    /** @param list<string> $args */
    private function attempt(string $namespace, array $args): AcquireResult
    {
        $r = $this->call('acquire', $namespace, $args);
        switch ($r[0]) {
            case 'granted':
                return AcquireResult::granted(new Grant((string) $r[1], (string) $r[2], (int) $r[3], (int) $r[4], (int) $r[5]));
            case 'refused':
                return AcquireResult::refused(new Conflict(
                    (string) $r[1],
                    (string) $r[2],
                    (string) $r[3],
                    (string) $r[4],
                    (string) $r[5],
                    (int) $r[6],
                    (string) $r[7],
                    (string) $r[8],
                    (string) $r[9],
                    (int) $r[10] === 1,
                ));
            case 'not_holder':
                return AcquireResult::notHolder();
        }
        throw new BackendException("acquire: unexpected reply '{$r[0]}'");
    }

    /**
     * One call of function $fn with the namespace's nine keys. `ERR Function
     * not found` (the call did not run): load the library and send it once
     * more. Any other failure is thrown; a call whose reply was lost is never
     * sent again.
     *
     * @param list<string> $args
     * @return array<int,mixed>
     */
    private function call(string $fn, string $namespace, array $args, bool $readOnly = false): array
    {
        $keys = self::keys($namespace);
        for ($try = 0; ; $try++) {
            $start = self::nowMs();
            try {
                $this->redis->clearLastError();
                $r = $this->redis->rawCommand(
                    $readOnly ? 'FCALL_RO' : 'FCALL',
                    $this->library->functionPrefix . $fn,
                    (string) count($keys),
                    ...$keys,
                    ...$args,
                );
            } catch (\RedisException $e) {
                throw $this->lostReply($fn, $start, $e);
            }
            if ($r === false) {
                $err = (string) ($this->redis->getLastError() ?? '');
                if ($try === 0 && str_starts_with($err, 'ERR Function not found')) {
                    $this->loadLibrary();
                    continue;
                }
                throw new BackendException("redis: $fn: " . ($err !== '' ? $err : 'no reply'));
            }
            if (!is_array($r) || $r === [] || !is_string($r[0])) {
                throw new BackendException("redis: $fn: unexpected reply");
            }
            if ($r[0] === 'invalid') {
                throw new InvalidRequestException((string) ($r[1] ?? 'invalid request'));
            }
            if ($r[0] === 'layout') {
                throw new BackendException(sprintf(
                    "namespace '%s' was written with data layout %s; this library (%s) uses layout %s",
                    $namespace,
                    (string) ($r[1] ?? '?'),
                    $this->library->name,
                    (string) ($r[2] ?? '?'),
                ));
            }
            return $r;
        }
    }

    /**
     * The exception of a call that got no reply: TimeoutException when it
     * waited its whole read timeout (phpredis says "read error" either way).
     */
    private function lostReply(string $fn, float $start, \RedisException $e): BackendException
    {
        $timeout = (float) $this->redis->getReadTimeout();
        $waited = (self::nowMs() - $start) / 1000;
        if ($timeout > 0 && $waited >= $timeout * 0.9) {
            // The late reply would be read as the next call's: drop the
            // connection; phpredis opens it again (and logs in) on the next call.
            try {
                $this->redis->close();
            } catch (\RedisException) {
            }
            return new TimeoutException(
                sprintf('redis: %s: no reply within %.3f s (the call may have run): %s', $fn, $timeout, $e->getMessage()),
                0,
                $e,
            );
        }
        return new BackendException("redis: $fn: " . $e->getMessage(), 0, $e);
    }

    private function subscribe(string $namespace): ?WakeSubscription
    {
        try {
            $this->wakeEndpoint ??= Endpoint::fromRedis($this->redis);
            return WakeSubscription::open($this->wakeEndpoint, "pl:{{$namespace}}:wake");
        } catch (BackendException) {
            // No wake-ups (no channel rights, a proxy without sharded pub/sub):
            // the 200 ms re-check alone keeps the wait correct, only slower.
            return null;
        }
    }

    /**
     * Sleeps until $until (ms, nowMs() clock), or until a wake-up names a path
     * that overlaps one of $paths (or is empty), or the subscription broke.
     * Returns true when the cancellation fired.
     *
     * @param list<string> $paths
     */
    private function sleepUntil(float $until, ?WakeSubscription $sub, array $paths, ?Cancellation $cancellation): bool
    {
        while (true) {
            if ($sub !== null && $sub->hasPending() && self::wakes($sub->take(), $paths)) {
                return false;
            }
            $left = $until - self::nowMs();
            if ($left <= 0) {
                return false;
            }
            $read = $cancellation?->streams() ?? [];
            if ($sub !== null && !$sub->isBroken()) {
                $read[] = $sub->stream();
            }
            if ($read === []) {
                usleep((int) ceil($left * 1000));
                return false;
            }
            $us = (int) ceil($left * 1000);
            $write = $except = null;
            $n = @stream_select($read, $write, $except, intdiv($us, 1000000), $us % 1000000);
            if ($n === false) {
                usleep(min($us, 10000));   // interrupted by a signal: look again
                continue;
            }
            foreach ($read as $stream) {
                if ($sub !== null && $stream === $sub->stream()) {
                    if (self::wakes($sub->take(), $paths) || $sub->isBroken()) {
                        return false;
                    }
                } elseif ($cancellation !== null && $cancellation->isCancelled()) {
                    return true;
                }
            }
        }
    }

    /**
     * Whether one of the wake-up payloads (removed paths joined by "\n")
     * overlaps one of the request's paths; an empty payload means "look again".
     *
     * @param list<string> $payloads
     * @param list<string> $paths
     */
    private static function wakes(array $payloads, array $paths): bool
    {
        foreach ($payloads as $payload) {
            if ($payload === '') {
                return true;
            }
            foreach (explode("\n", $payload) as $removed) {
                foreach ($paths as $p) {
                    if (Paths::overlap($removed, $p)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /**
     * The canonical paths of $targets in the matrix's role order.
     *
     * @param array<string,string>|list<string> $targets
     * @return list<string>
     */
    private function resolveTargets(string $op, array $targets): array
    {
        $roles = $this->library->roles($op);
        if ($roles === null && $this->library->knowsOperations()) {
            throw new InvalidRequestException("unknown operation '$op'");
        }
        if ($roles !== null && count($targets) !== count($roles)) {
            throw new InvalidRequestException(sprintf(
                "operation '%s' takes %d target(s) (%s), got %d",
                $op,
                count($roles),
                implode(', ', $roles),
                count($targets),
            ));
        }
        if ($targets === []) {
            throw new InvalidRequestException("operation '$op' needs at least one target");
        }
        $ordered = self::orderTargets($op, $targets, $roles);
        $paths = [];
        foreach ($ordered as [$role, $path]) {
            if (!is_string($path)) {
                throw new InvalidRequestException("$role path must be a string");
            }
            try {
                $paths[] = Paths::normalize($path);
            } catch (InvalidRequestException $e) {
                throw new InvalidRequestException("$role path: " . $e->getMessage(), 0, $e);
            }
        }
        foreach ($this->library->notInside($op) as [$inner, $outer]) {
            if (isset($paths[$inner], $paths[$outer]) && Paths::within($paths[$inner], $paths[$outer])) {
                throw new InvalidRequestException(sprintf(
                    "%s: %s '%s' is %s %s '%s'",
                    $op,
                    $roles[$inner],
                    $paths[$inner],
                    $paths[$inner] === $paths[$outer] ? 'the same as' : 'inside',
                    $roles[$outer],
                    $paths[$outer],
                ));
            }
        }
        return $paths;
    }

    /**
     * [role, path] pairs in role order, from a list (role order already) or a role => path map.
     *
     * @param array<string,string>|list<string> $targets
     * @param list<string>|null $roles
     * @return list<array{string, mixed}>
     */
    private static function orderTargets(string $op, array $targets, ?array $roles): array
    {
        $ordered = [];
        if (array_is_list($targets)) {
            foreach ($targets as $i => $path) {
                $ordered[] = [$roles[$i] ?? "#$i", $path];
            }
        } else {
            if ($roles === null) {
                throw new InvalidRequestException(
                    'the roles of the operations are unknown (library given by prefix): give the paths as a list in role order',
                );
            }
            foreach ($roles as $role) {
                if (!array_key_exists($role, $targets)) {
                    $unknown = array_diff(array_keys($targets), $roles);
                    throw new InvalidRequestException($unknown !== []
                        ? sprintf("operation '%s' has no role '%s'", $op, (string) reset($unknown))
                        : sprintf("operation '%s' needs a '%s' target", $op, $role));
                }
                $ordered[] = [$role, $targets[$role]];
            }
        }
        return $ordered;
    }

    /** @return array<string,string> role => path from a flat [role, path, ...] reply */
    private static function pairs(mixed $flat): array
    {
        $out = [];
        $flat = is_array($flat) ? array_values($flat) : [];
        for ($i = 0; $i + 1 < count($flat); $i += 2) {
            $out[(string) $flat[$i]] = (string) $flat[$i + 1];
        }
        return $out;
    }

    private static function resolvePrefix(string $prefix): string
    {
        try {
            return Paths::normalize($prefix);
        } catch (InvalidRequestException $e) {
            throw new InvalidRequestException('prefix: ' . $e->getMessage(), 0, $e);
        }
    }

    public static function checkNamespace(string $ns): void
    {
        if ($ns === '') {
            throw new InvalidRequestException('namespace is empty');
        }
        if (strlen($ns) > 128) {
            throw new InvalidRequestException(sprintf('namespace is %d bytes; the limit is 128', strlen($ns)));
        }
        if (preg_match('/\A[A-Za-z0-9._:-]+\z/', $ns) !== 1) {
            throw new InvalidRequestException("namespace '$ns' has a character outside [A-Za-z0-9._:-]");
        }
    }

    private static function checkOwner(string $owner): void
    {
        if ($owner === '') {
            throw new InvalidRequestException('owner is empty');
        }
        if (strlen($owner) > 256) {
            throw new InvalidRequestException(sprintf('owner is %d bytes; the limit is 256', strlen($owner)));
        }
        $problem = Paths::textProblem($owner);
        if ($problem !== null) {
            throw new InvalidRequestException("owner has $problem");
        }
    }

    private static function checkId(string $id, string $what): void
    {
        if (preg_match('/\A[A-Za-z0-9-]{1,64}\z/', $id) !== 1) {
            throw new InvalidRequestException("$what must be 1..64 characters of [A-Za-z0-9-]");
        }
    }

    private static function checkToken(string $token, string $what): void
    {
        if ($token === '' || strlen($token) > 256) {
            throw new InvalidRequestException("$what must be 1..256 bytes");
        }
    }

    private static function checkIdempotencyKey(string $key): void
    {
        if (preg_match('/\A[A-Za-z0-9._:-]{1,128}\z/', $key) !== 1) {
            throw new InvalidRequestException('idempotency_key must be 1..128 characters of [A-Za-z0-9._:-]');
        }
    }

    /** Milliseconds of a monotonic clock. */
    private static function nowMs(): float
    {
        return hrtime(true) / 1e6;
    }
}
