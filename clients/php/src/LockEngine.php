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
    public const VERSION = '1.0.0';
    public const DEFAULT_TTL_MS = 30000;
    public const MAX_TTL_MS = 604800000;       // one week
    public const RECHECK_MS = 200;             // re-check period of a waiting acquire
    public const MAX_RESERVATION_MS = 2000;    // the library caps reservations at 2 s
    public const MAX_LIST_LIMIT = 10000;
    public const MAX_BLOCKERS = 1000;
    public const MAX_WAITERS = 1000;
    /**
     * How long past its wait a waiting acquire may take when the server
     * stalls: its last attempt waits at most this long for its answer.
     */
    public const WAIT_MARGIN_MS = 250;
    private const KEY_SUFFIXES = ['meta', 'idx', 'locks', 'exp', 'ent', 'wq', 'wexp', 'wrec', 'wake'];
    private const CLOCK_REFRESH_MS = 30000;

    private readonly Connection $connection;
    private ?Contract $contract = null;
    /** @var array{float, float}|null the server's clock: [s0 (ms since the epoch), m0 (nowMs() when read)] */
    private ?array $serverClock = null;
    private float $clockReadAt = -INF;
    private readonly DefaultLimits $defaults;

    /**
     * @param \Redis|\RedisCluster|Connection $redis a connected phpredis client (calls go through it): a \Redis
     *   (one server) or a \RedisCluster (a Redis Cluster, docs/php.md "Deployments")
     * @param Library $library the Functions library to call (and to load where it is missing, when it has its text)
     * @param Endpoint|null $wakeEndpoint wake-up subscriptions: with a \Redis, where to open them (default: the
     *   server $redis talks to); with a \RedisCluster, their login and TLS (host and port unused; default: none)
     */
    public function __construct(
        \Redis|\RedisCluster|Connection $redis,
        private readonly Library $library,
        ?Endpoint $wakeEndpoint = null,
    ) {
        $this->connection = match (true) {
            $redis instanceof Connection => $redis,
            $redis instanceof \RedisCluster => new ClusterConnection($redis, $wakeEndpoint ?? new Endpoint('')),
            default => new StandaloneConnection($redis, $wakeEndpoint),
        };
        $this->defaults = new DefaultLimits();
    }

    /**
     * Connects to `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]` (or `rediss://`),
     * or to a Redis Cluster: `redis://[[USER]:PASSWORD@]HOST:PORT,HOST:PORT[,...]`
     * (the seeds; their login and TLS options hold for every node), or one
     * node's URL when that node says `cluster_enabled:1` (`INFO cluster`);
     * or to the master a Sentinel names:
     * `redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/DB]#MASTER`
     * (SentinelConnection: found again after a failover).
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
        return new self(self::openConnection($url, $connectTimeout, $commandTimeout, $tlsOptions), $library);
    }

    /**
     * The Connection connect() makes for $url (the same URLs and options),
     * for code that also needs the connection itself (the driver
     * bin/pathlock-php-shell sets its read timeout per call).
     *
     * @param array<string,mixed> $tlsOptions
     */
    public static function openConnection(
        string $url,
        float $connectTimeout = 2.0,
        float $commandTimeout = 2.0,
        array $tlsOptions = [],
    ): Connection {
        if (SentinelDiscovery::isSentinelUrl($url)) {
            return SentinelConnection::open($url, $connectTimeout, $commandTimeout, $tlsOptions);
        }
        $seeds = Endpoint::seedsFromUrl($url, $connectTimeout, $commandTimeout, $tlsOptions);
        if (count($seeds) === 1) {
            $redis = $seeds[0]->connect();
            if (!ClusterConnection::isClusterNode($redis)) {
                return new StandaloneConnection($redis, $seeds[0]);
            }
            $redis->close();
        }
        return ClusterConnection::open($seeds);
    }

    public function library(): Library
    {
        return $this->library;
    }

    /**
     * Loads the library on the server, on a Cluster on every master (FUNCTION
     * LOAD without REPLACE; "already exists" means this very text is there,
     * which is success).
     */
    public function loadLibrary(): void
    {
        if ($this->library->code === null) {
            throw new BackendException(
                "the server lacks the library {$this->library->name}, and this client was configured by its function prefix only (give the library file to load it)",
            );
        }
        foreach ($this->connection->masters() as $master) {
            $on = $master === null ? '' : " on {$master[0]}:{$master[1]}";
            try {
                $r = $this->connection->command($master, 'FUNCTION', 'LOAD', $this->library->code);
            } catch (\RedisException $e) {
                throw new BackendException("redis: FUNCTION LOAD$on: " . $e->getMessage(), 0, $e);
            }
            if ($r === false) {
                $err = $this->connection->lastError();
                if (!str_contains($err, 'already exists')) {
                    throw new BackendException("redis: FUNCTION LOAD$on: $err");
                }
                $this->checkSameLibrary($master);
            }
        }
    }

    /**
     * A library of this name is loaded (on $master): it must be this very
     * text, else refused (never replaced).
     *
     * @param array{string,int}|null $master
     */
    private function checkSameLibrary(?array $master): void
    {
        $name = $this->library->name;
        $list = $this->connection->command($master, 'FUNCTION', 'LIST', 'LIBRARYNAME', $name, 'WITHCODE');
        foreach (is_array($list) ? $list : [] as $entry) {
            $fields = is_array($entry) ? $entry : [];
            $at = array_search('library_name', $fields, true);
            $code = array_search('library_code', $fields, true);
            if ($at !== false && ($fields[$at + 1] ?? null) === $name && $code !== false
                && rtrim((string) $fields[$code + 1]) !== rtrim((string) $this->library->code)) {
                throw new BackendException("another library named $name is loaded (its code differs from the one given); not replaced");
            }
        }
    }

    /**
     * What the loaded library says about itself (its function `contract`,
     * protocol 4.2): operations and roles, limits, keys; read once, loading
     * the library first where it is missing. A library older than 4.2 has
     * no `contract`: BackendException naming the protocol.
     */
    public function contract(): Contract
    {
        if ($this->contract !== null) {
            return $this->contract;
        }
        $fn = $this->library->functionPrefix . 'contract';
        for ($try = 0; ; $try++) {
            try {
                $r = $this->connection->command(null, 'FCALL_RO', $fn, '0');
            } catch (\RedisException $e) {
                throw $this->lostReply('contract', self::nowMs(), $e);
            }
            if (is_array($r) && ($r[0] ?? null) === 'contract') {
                $this->contract = Contract::fromJson((string) $r[1]);
                $this->clockReadAt = self::nowMs();
                $this->serverClock = $this->readServerClock();
                return $this->contract;
            }
            $err = $this->connection->lastError();
            if (!str_starts_with($err, 'ERR Function not found')) {
                throw new BackendException("redis: contract: " . ($err !== '' ? $err : 'unexpected reply'));
            }
            if ($try > 0 || !$this->libraryMissing()) {
                throw new BackendException(
                    "the library {$this->library->name} has no function 'contract': it is older than protocol 4.2 "
                    . '(pathlock 1.0), which this client needs; load the library shipped with this package (Library::bundled())',
                );
            }
            $this->loadLibrary();
        }
    }

    /** Whether no library of this name is loaded. */
    private function libraryMissing(): bool
    {
        $list = $this->connection->command(null, 'FUNCTION', 'LIST', 'LIBRARYNAME', $this->library->name);
        foreach (is_array($list) ? $list : [] as $entry) {
            $at = is_array($entry) ? array_search('library_name', $entry, true) : false;
            if ($at !== false && $entry[$at + 1] === $this->library->name) {
                return false;
            }
        }
        return true;
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
        $defaults = $this->defaultLimits();   // read at most every 5 s, sent when there are some
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
            return $this->attempt($namespace, $args, null, $defaults);   // one attempt, no place in line
        }
        try {
            return $this->wait($namespace, $args, $paths, self::nowMs() + $waitMs, $waiter, $cancellation, $defaults);
        } catch (\Throwable $e) {
            // After a timeout the server stalls: leaving would wait on it too, and
            // the place ends with its reservation (at most 2 s) anyway.
            if ($inLine && !$e instanceof TimeoutException) {
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
        $this->checkOwner($owner);
        $maxTtl = $this->contract()->limit('ttl_ms');
        if ($ttlMs < 1 || $ttlMs > $maxTtl) {
            throw new InvalidRequestException(sprintf('ttl %d ms is outside 1..%d ms', $ttlMs, $maxTtl));
        }
        if ($waitMs < 0 || $waitMs > $maxTtl) {
            throw new InvalidRequestException(sprintf('wait %d ms is outside 0..%d ms', $waitMs, $maxTtl));
        }
        if ($reenter !== null) {
            $this->checkId($reenter->id, 'reenter_id');
            $this->checkToken($reenter->token, 'reenter_token');
            if ($idempotencyKey !== null && $idempotencyKey !== '') {
                throw new InvalidRequestException('a reentry (reenter_id) takes no idempotency_key: the lock it proves is already known');
            }
        }
        if ($idempotencyKey !== null) {
            $this->checkIdempotencyKey($idempotencyKey);
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
    private function wait(string $namespace, array $args, array $paths, float $deadline, string $waiter, ?Cancellation $cancellation, string $defaults): AcquireResult
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
                $args[$last] = (string) ($final || $waiter === '' ? 0 : min($left + self::RECHECK_MS, $this->contract()->limit('reserve_ms')));
                $out = $this->attempt($namespace, $args, $deadline, $defaults);
                if ($out->grant !== null && $waited && $cancellation?->isCancelled()) {
                    // a grant that raced the cancellation: given back, never dropped
                    $this->release($namespace, $out->grant->id, $out->grant->token);
                    return AcquireResult::cancelled();
                }
                if ($out->conflict === null || $final) {
                    return $out;   // (over a limit: at once; the library took the place out of the line)
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
        if (!$this->isLockId($id) || !$this->isLockToken($token)) {
            return false;
        }
        $r = $this->call('release', $namespace, [$id, $token]);
        return $r[0] === 'released';
    }

    /** The lease becomes now + ttl (or the lock's own TTL); false when the lock is gone. */
    public function renew(string $namespace, string $id, string $token, ?int $ttlMs = null): bool
    {
        self::checkNamespace($namespace);
        $maxTtl = $this->contract()->limit('ttl_ms');
        if ($ttlMs !== null && ($ttlMs < 1 || $ttlMs > $maxTtl)) {
            throw new InvalidRequestException(sprintf('ttl %d ms is outside 1..%d ms', $ttlMs, $maxTtl));
        }
        if (!$this->isLockId($id) || !$this->isLockToken($token)) {
            return false;
        }
        $r = $this->call('renew', $namespace, [$id, $token, $ttlMs === null ? '' : (string) $ttlMs]);
        return $r[0] === 'renewed';
    }

    /** Still the holder? Read-only (FCALL_RO). */
    public function isHeld(string $namespace, string $id, string $token): bool
    {
        self::checkNamespace($namespace);
        if (!$this->isLockId($id) || !$this->isLockToken($token)) {
            return false;
        }
        $r = $this->call('held', $namespace, [$id, $token], true);
        return (int) ($r[1] ?? 0) === 1;
    }

    /** Drops a lock whatever its holds, without its token (administrators). */
    public function forceRelease(string $namespace, string $id): bool
    {
        self::checkNamespace($namespace);
        if (!$this->isLockId($id)) {
            return false;
        }
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
            $page = $this->listPage($namespace, $prefix, $this->contract()->limit('list_limit'), $after);
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
        $this->checkLimit($limit, 'list_limit');
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
        $this->checkLimit($limit, 'blockers_limit');
        try {
            $r = $this->call('blockers', $namespace, [$op, ...$paths, (string) $limit], true);
        } catch (InvalidRequestException $e) {
            throw $this->withPaths($e, $op, $paths);
        }
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
        $this->checkLimit($limit, 'waiters_limit');
        $r = $this->call('waiters', $namespace, [$prefix, (string) $limit], true);
        $out = [];
        foreach (array_slice($r, 1) as $w) {
            $out[] = new WaiterInfo((string) $w[0], (string) $w[1], (string) $w[2], self::pairs($w[5]), (int) $w[3], (int) $w[4]);
        }
        return $out;
    }

    // --- limits per namespace (Limits, DefaultLimits; administrators) -----------

    /**
     * Gives $namespace limits of its own, which replace the default whole at
     * once for every client; null takes them away. Its keys then do not
     * expire while it is idle.
     */
    public function setLimits(string $namespace, ?Limits $limits): void
    {
        self::checkNamespace($namespace);
        $this->call('set_limits', $namespace, [$limits?->text() ?? '']);
    }

    /** The limits in force in $namespace and its use of them (read-only; the default read afresh). */
    public function limits(string $namespace): LimitsStatus
    {
        self::checkNamespace($namespace);
        return LimitsStatus::fromReply($this->call('limits_ro', $namespace, [], true), $this->defaultLimits(true));
    }

    /** Sets the default limits of every namespace without its own (SET, or DEL for none); every client sees them within 5 s, this one at once. */
    public function setDefaultLimits(Limits $limits): void
    {
        $this->defaults->write($this->connection, $this->contract(), $limits);
    }

    /** Where the one warning goes when the user may not read the default limits (default: error_log). */
    public function setWarningHandler(?callable $warn): void
    {
        $this->defaults->setWarningHandler($warn);
    }

    /** The default limits' text for an acquire ('' when none; DefaultLimits). */
    private function defaultLimits(bool $fresh = false): string
    {
        return $this->defaults->text($this->contract(), function (string $key): array {
            $start = self::nowMs();
            try {
                $v = $this->connection->command($key, 'GET', $key);
            } catch (\RedisException $e) {
                if (str_starts_with($e->getMessage(), 'NOPERM')) {
                    return [false, $e->getMessage()];   // (phpredis throws an ACL refusal)
                }
                throw $this->lostReply("GET $key", $start, $e);
            }
            $error = $v === false ? $this->connection->lastError() : '';
            return [$v === false && $error === '' ? null : $v, $error];   // (phpredis answers a missing key false)
        }, $fresh);
    }

    /** Takes a place out of the line (harmless when it is gone). */
    public function leave(string $namespace, string $waiterId): bool
    {
        self::checkNamespace($namespace);
        $this->checkId($waiterId, 'waiter_id');
        $r = $this->call('leave', $namespace, [$waiterId]);
        return (int) ($r[1] ?? 0) === 1;
    }

    /** The nine keys of a namespace, in the order every function takes them. */
    public static function keys(string $namespace): array
    {
        return array_map(fn(string $s): string => "pl:{{$namespace}}:$s", self::KEY_SUFFIXES);
    }

    // --- internals -----------------------------------------------------------

    /**
     * One acquire, with its deadline_ms (protocol 4.2) on the server's clock:
     * the moment this client stops waiting for the answer, which is the
     * command timeout, or for a waiting acquire at most $until (nowMs()
     * clock) + WAIT_MARGIN_MS. A `late` answer (the server's clock ran
     * ahead of this client's estimate) is sent once more with a fresh one.
     *
     * @param list<string> $args
     */
    private function attempt(string $namespace, array $args, ?float $until = null, string $defaults = ''): AcquireResult
    {
        $deadlines = $this->contract()->atLeast('4.2');
        $resent = 0;
        for ($try = 0; ; $try++) {
            if ($deadlines) {
                $this->refreshServerClock($until);
            }
            $budget = $this->budgetMs($until);
            $sent = $deadlines ? [...$args, $this->serverDeadline($budget)] : $args;
            if ($defaults !== '') {
                $sent[] = $defaults;   // default_limits (protocol 4.3, after deadline_ms)
            }
            try {
                $r = $this->withReadTimeout($budget, fn(): array => $this->call('acquire', $namespace, $sent));
            } catch (InvalidRequestException $e) {
                throw $this->withPaths($e, $args[1], array_slice($args, 8));
            } catch (BackendException $e) {
                if (!$this->resendable($e, $args[7], $resent++)) {
                    throw $e;
                }
                continue;
            }
            if ($r[0] !== 'late') {
                return $this->acquireResult($r);
            }
            $this->serverClock = [(float) $r[1], self::nowMs()];
            if ($try > 0) {
                throw new BackendException('acquire reached the server after its deadline twice (the server\'s clock runs ahead); nothing was taken');
            }
        }
    }

    /**
     * May an acquire whose reply was lost be sent again? Only one with an
     * idempotency key (the retry gets the lock the first one made), at most
     * twice more, as the Go and Node clients do; never after its deadline
     * (TimeoutException) or an error reply.
     */
    private function resendable(BackendException $e, string $idempotencyKey, int $resent): bool
    {
        return $idempotencyKey !== '' && $resent < 2 && !$e instanceof TimeoutException
            && $e->getPrevious() instanceof \RedisException;
    }

    /**
     * The library's "OP: A may not be B or inside it" as the C++ engine says
     * it, with the paths ("OP: A '/x/y' is inside B '/x'"); other messages as they are.
     *
     * @param list<string> $paths the request's paths in role order (and maybe more arguments after them)
     */
    private function withPaths(InvalidRequestException $e, string $op, array $paths): InvalidRequestException
    {
        $roles = $this->contract()->roles($op) ?? [];
        if (preg_match('/\A\S+: (\S+) may not be (\S+) or inside it\z/', $e->getMessage(), $m) !== 1) {
            return $e;
        }
        $i = array_search($m[1], $roles, true);
        $j = array_search($m[2], $roles, true);
        if ($i === false || $j === false || !isset($paths[$i], $paths[$j])) {
            return $e;
        }
        $how = $paths[$i] === $paths[$j] ? 'the same as' : 'inside';
        return new InvalidRequestException(sprintf("%s: %s '%s' is %s %s '%s'", $op, $m[1], $paths[$i], $how, $m[2], $paths[$j]), 0, $e);
    }

    /** How long (ms) an attempt waits for its answer: the command timeout, or up to $until + WAIT_MARGIN_MS. */
    private function budgetMs(?float $until): float
    {
        $command = $this->connection->readTimeout() * 1000;
        $command = $command > 0 ? $command : INF;
        return $until === null ? $command : min($command, max(0.0, $until - self::nowMs()) + self::WAIT_MARGIN_MS);
    }

    /** Reads the server's clock again when the last reading is 30 s old (within the attempt's budget). */
    private function refreshServerClock(?float $until): void
    {
        if (self::nowMs() - $this->clockReadAt >= self::CLOCK_REFRESH_MS) {
            $this->clockReadAt = self::nowMs();
            $this->serverClock = $this->withReadTimeout($this->budgetMs($until), fn(): ?array => $this->readServerClock());
        }
    }

    /**
     * deadline_ms for a call that waits $budget ms from now: the server's
     * clock as last read (TIME) plus the time since, plus the budget
     * (docs/lua-protocol.md#deadlines); '' when TIME is not allowed.
     */
    private function serverDeadline(float $budget): string
    {
        if ($this->serverClock === null || is_infinite($budget)) {
            return '';
        }
        [$s0, $m0] = $this->serverClock;
        return sprintf('%.0f', floor($s0 + (self::nowMs() - $m0) + $budget));
    }

    /** @return array{float, float}|null [the server's TIME in ms, nowMs() at its arrival]; null without TIME rights */
    private function readServerClock(): ?array
    {
        $start = self::nowMs();
        try {
            $t = $this->connection->command(null, 'TIME');
        } catch (\RedisException $e) {
            throw $this->lostReply('TIME', $start, $e);
        }
        if (!is_array($t) || count($t) !== 2) {
            return null;
        }
        return [(float) $t[0] * 1000 + intdiv((int) $t[1], 1000), self::nowMs()];
    }

    /**
     * $call with the connection's read timeout set to $ms (restored after).
     *
     * @template T
     * @param callable(): T $call
     * @return T
     */
    private function withReadTimeout(float $ms, callable $call): mixed
    {
        $old = $this->connection->readTimeout();
        if (is_infinite($ms) || abs($ms / 1000 - $old) < 1e-6 || !$this->connection->setReadTimeout($ms / 1000)) {
            return $call();   // (a Cluster keeps its read timeout: the deadline_ms sent still bounds the call)
        }
        try {
            return $call();
        } finally {
            $this->connection->setReadTimeout($old);
        }
    }

    /** @param array<int,mixed> $r */
    private function acquireResult(array $r): AcquireResult
    {
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
            case 'over_limit':
                return AcquireResult::overLimit(LimitRefusal::fromReply($r));
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
        $keys = array_map(fn(string $s): string => "pl:{{$namespace}}:$s", $this->contract()->keySuffixes);
        for ($try = 0; ; $try++) {
            $start = self::nowMs();
            try {
                $r = $this->connection->command(
                    $keys[0],   // the namespace's slot (all nine keys share its hash tag)
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
                $err = $this->connection->lastError();
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
        $timeout = $this->connection->readTimeout();
        $waited = (self::nowMs() - $start) / 1000;
        if ($timeout > 0 && $waited >= $timeout * 0.9) {
            // The late reply would be read as the next call's: drop the
            // connection; phpredis opens it again (and logs in) on the next call.
            $this->connection->drop();
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
            return $this->connection->subscribe("pl:{{$namespace}}:wake");
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
        $roles = $this->contract()->roles($op);
        if ($roles === null) {
            throw new InvalidRequestException("unknown operation '$op'");
        }
        if (count($targets) !== count($roles)) {
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
        return $paths;
    }

    /**
     * [role, path] pairs in role order, from a list (role order already) or a role => path map.
     *
     * @param array<string,string>|list<string> $targets
     * @param list<string>|null $roles
     * @return list<array{string, mixed}>
     */
    private static function orderTargets(string $op, array $targets, array $roles): array
    {
        $ordered = [];
        if (array_is_list($targets)) {
            foreach ($targets as $i => $path) {
                $ordered[] = [$roles[$i] ?? "#$i", $path];
            }
        } else {
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

    private function checkOwner(string $owner): void
    {
        if ($owner === '') {
            throw new InvalidRequestException('owner is empty');
        }
        $max = $this->contract()->limit('owner_bytes');
        if (strlen($owner) > $max) {
            throw new InvalidRequestException(sprintf('owner is %d bytes; the limit is %d', strlen($owner), $max));
        }
        $problem = Paths::textProblem($owner);
        if ($problem !== null) {
            throw new InvalidRequestException("owner has $problem");
        }
    }

    /**
     * Could this be a lock's id (the engine's rule: 1..id_chars of [A-Za-z0-9-])?
     * A proof that could not be a lock's names no lock: release, renew, isHeld
     * and forceRelease answer false for it without asking the server, as every
     * client does; a reentry refuses it (checkId).
     */
    private function isLockId(string $id): bool
    {
        return preg_match('/\A[A-Za-z0-9-]+\z/', $id) === 1 && strlen($id) <= $this->contract()->limit('id_chars');
    }

    /** Could this be a lock's token (1..token_bytes bytes)? */
    private function isLockToken(string $token): bool
    {
        return $token !== '' && strlen($token) <= $this->contract()->limit('token_bytes');
    }

    private function checkId(string $id, string $what): void
    {
        if (!$this->isLockId($id)) {
            $max = $this->contract()->limit('id_chars');
            throw new InvalidRequestException("$what must be 1..$max characters of [A-Za-z0-9-]");
        }
    }

    private function checkToken(string $token, string $what): void
    {
        if (!$this->isLockToken($token)) {
            $max = $this->contract()->limit('token_bytes');
            throw new InvalidRequestException("$what must be 1..$max bytes");
        }
    }

    private function checkIdempotencyKey(string $key): void
    {
        $max = $this->contract()->limit('idempotency_key_chars');
        if (preg_match('/\A[A-Za-z0-9._:-]+\z/', $key) !== 1 || strlen($key) > $max) {
            throw new InvalidRequestException("idempotency_key must be 1..$max characters of [A-Za-z0-9._:-]");
        }
    }

    /** A page size: 1 up to the contract's limit $name. */
    private function checkLimit(int $limit, string $name): void
    {
        $max = $this->contract()->limit($name);
        if ($limit < 1 || $limit > $max) {
            throw new InvalidRequestException(sprintf('limit %d is outside 1..%d', $limit, $max));
        }
    }

    /** Milliseconds of a monotonic clock. */
    private static function nowMs(): float
    {
        return hrtime(true) / 1e6;
    }
}
