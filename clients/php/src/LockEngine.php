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
 *
 * The facade over the client's internal parts (clients/php/README.md):
 * Input (the checks), Codec (keys and arguments by name from the contract,
 * replies), WaitPolicy (the wait loop, reserve_ms), Calls (one call, one
 * acquire attempt) over Transport and ServerClock (the connection,
 * deadline_ms) and LibraryLoader (loading, the contract).
 */
final class LockEngine implements LockEngineInterface
{
    public const VERSION = '1.0.0';
    public const DEFAULT_TTL_MS = 30000;
    public const MAX_TTL_MS = 604800000;       // one week
    /**
     * The re-check period and the reservation cap of a waiting acquire for a
     * library older than protocol 4.4; the engine uses the numbers of its
     * library's contract (`waiting`), which are these for the shipped one.
     */
    public const RECHECK_MS = WaitPolicy::BEFORE_4_4['recheck_ms'];
    public const MAX_RESERVATION_MS = WaitPolicy::BEFORE_4_4['max_reservation_ms'];
    public const MAX_LIST_LIMIT = 10000;
    public const MAX_BLOCKERS = 1000;
    public const MAX_WAITERS = 1000;
    /**
     * How long past its wait a waiting acquire may take when the server
     * stalls: its last attempt waits at most this long for its answer.
     */
    public const WAIT_MARGIN_MS = 250;

    private readonly Calls $calls;
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
        $this->calls = new Calls(match (true) {
            $redis instanceof Connection => $redis,
            $redis instanceof \RedisCluster => new ClusterConnection($redis, $wakeEndpoint ?? new Endpoint('')),
            default => new StandaloneConnection($redis, $wakeEndpoint),
        }, $library);
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
        return Transport::open($url, $connectTimeout, $commandTimeout, $tlsOptions);
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
        $this->calls->loader->load();
    }

    /**
     * What the loaded library says about itself (its function `contract`,
     * protocol 4.2): operations and roles, limits, keys, arguments, the
     * waiting numbers (4.4); read once, loading the library first where it
     * is missing. A library older than 4.2 has no `contract`:
     * BackendException naming the protocol.
     */
    public function contract(): Contract
    {
        return $this->calls->contract();
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
        $r = $this->request($namespace, $owner, $op, $targets, $ttlMs, $waitMs, $fair, $reenter, $idempotencyKey, AcquireRequest::freshIds());
        return $this->attempts($r, $cancellation);
    }

    /**
     * Converts the live lock $lock (its id and token are the proof) to
     * operation $op on $targets in one atomic step, or changes nothing
     * (protocol 4.5; docs/design.md#conversion). Judged exactly as an acquire
     * of $op on $targets, the lock's own targets set aside. Granted: the same
     * id and token, a new fence above every fence issued before, the lease
     * now + $ttlMs. Refused (conflict; wouldDeadlock when the lock refusing
     * it is itself waiting to convert to something this lock refuses),
     * notHolder, cancelled, or an exception: the lock is as it was. It waits
     * as acquire() does; a grant that came as the wait was cancelled is kept
     * and returned (the old operation may no longer fit beside what was
     * granted since).
     *
     * @param array<string,string>|list<string> $targets role => path, or the paths in the matrix's role order
     * @param string|null $idempotencyKey sent again with the same conversion after a lost reply, gets the lock as
     *   that conversion made it
     * @throws InvalidRequestException bad input, or a lock with more than one hold; nothing was changed
     * @throws BackendException Redis failed; a waiting conversion has left the line
     */
    public function convert(
        string $namespace,
        Grant $lock,
        string $op,
        array $targets,
        int $ttlMs = self::DEFAULT_TTL_MS,
        int $waitMs = 0,
        bool $fair = true,
        ?string $idempotencyKey = null,
        ?Cancellation $cancellation = null,
    ): AcquireResult {
        Input::checkNamespace($namespace);
        $this->calls->input()->checkConvert($namespace, $lock, $ttlMs, $waitMs, $idempotencyKey);
        $paths = $this->calls->input()->resolveTargets($op, $targets);
        $r = new AcquireRequest($namespace, '', $op, $paths, $ttlMs, $waitMs, $fair, $lock, $idempotencyKey ?? '',
            $this->defaultLimits(), '', '', AcquireRequest::freshIds()[2], AcquireRequest::CONVERT);
        return $this->attempts($r, $cancellation);
    }

    /**
     * The attempts of $r: one (no wait, or a reentry), or the wait loop
     * (WaitPolicy::wait()), which leaves the line on an error. A grant that
     * raced a cancellation is released, unless it is a conversion's.
     */
    private function attempts(AcquireRequest $r, ?Cancellation $cancellation): AcquireResult
    {
        if ($r->once()) {
            return $this->calls->attempt($r, $this->calls->policy()->reserveMs($r->waitMs, $r->inLine()), null);   // no place in line
        }
        $deadline = Transport::nowMs() + $r->waitMs;
        try {
            return $this->calls->policy()->wait(
                $deadline,
                $r->inLine(),
                $r->paths,
                $cancellation,
                fn(int $reserveMs): AcquireResult => $this->calls->attempt($r, $reserveMs, $deadline),
                fn(): ?WakeSubscription => $this->calls->subscribe($r->namespace),
                $r->converts() ? null : function (Grant $g) use ($r): void {
                    $this->release($r->namespace, $g->id, $g->token);
                },
                function () use ($r): void {
                    $this->leave($r->namespace, $r->waiterId);
                },
            );
        } catch (\Throwable $e) {
            // After a timeout the server stalls: leaving would wait on it too, and
            // the place ends with its reservation (at most 2 s) anyway.
            if ($r->inLine() && !$e instanceof TimeoutException) {
                try {
                    $this->leave($r->namespace, $r->waiterId);
                } catch (\Throwable) {
                    // best effort: the reservation ends within 2 s anyway
                }
            }
            throw $e;
        }
    }

    /**
     * @internal The driver's `protocol` command (docs/cli.md): the keys and
     * the arguments of the first attempt acquire() would send for this
     * request, as if no time had passed, with the ids $ids ([new_id,
     * new_token, waiter_id]) and deadline_ms ''. The same steps as acquire().
     *
     * @param array<string,string>|list<string> $targets
     * @param array{string, string, string} $ids
     * @return array{keys: list<string>, args: list<string>}
     */
    public function firstAttempt(string $namespace, string $owner, string $op, array $targets, int $ttlMs, int $waitMs, bool $fair, array $ids): array
    {
        $r = $this->request($namespace, $owner, $op, $targets, $ttlMs, $waitMs, $fair, null, null, $ids);
        return [
            'keys' => $this->calls->codec()->keys('acquire', $namespace),
            'args' => $this->calls->codec()->acquireArgs($r, $this->calls->policy()->reserveMs($r->waitMs, $r->inLine()), ''),
        ];
    }

    /** @internal The driver's `protocol` command: reserve_ms of an in-line attempt with $leftMs of its wait left. */
    public function reserveMs(int $leftMs): int
    {
        return $this->calls->policy()->reserveMs($leftMs, true);
    }

    /**
     * One acquire request, checked, with its paths in role order, its ids
     * and the default limits (read at most every 5 s).
     *
     * @param array<string,string>|list<string> $targets
     * @param array{string, string, string} $ids [new_id, new_token, waiter_id]
     */
    private function request(
        string $namespace,
        string $owner,
        string $op,
        array $targets,
        int $ttlMs,
        int $waitMs,
        bool $fair,
        ?Grant $reenter,
        ?string $idempotencyKey,
        array $ids,
    ): AcquireRequest {
        Input::checkNamespace($namespace);
        $this->calls->input()->checkAcquire($namespace, $owner, $ttlMs, $waitMs, $reenter, $idempotencyKey);
        $paths = $this->calls->input()->resolveTargets($op, $targets);
        return new AcquireRequest($namespace, $owner, $op, $paths, $ttlMs, $waitMs, $fair, $reenter,
            $idempotencyKey ?? '', $this->defaultLimits(), ...$ids);
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
        Input::checkNamespace($namespace);
        if (!$this->calls->input()->isLockId($id) || !$this->calls->input()->isLockToken($token)) {
            return false;
        }
        return $this->calls->callNamed('release', $namespace, ['id' => $id, 'token' => $token])[0] === 'released';
    }

    /** The lease becomes now + ttl (or the lock's own TTL); false when the lock is gone. */
    public function renew(string $namespace, string $id, string $token, ?int $ttlMs = null): bool
    {
        Input::checkNamespace($namespace);
        if ($ttlMs !== null) {
            $this->calls->input()->checkTtl($ttlMs);
        }
        if (!$this->calls->input()->isLockId($id) || !$this->calls->input()->isLockToken($token)) {
            return false;
        }
        $ttl = $ttlMs === null ? '' : (string) $ttlMs;
        return $this->calls->callNamed('renew', $namespace, ['id' => $id, 'token' => $token, 'ttl_ms' => $ttl])[0] === 'renewed';
    }

    /** Still the holder? Read-only (FCALL_RO). */
    public function isHeld(string $namespace, string $id, string $token): bool
    {
        Input::checkNamespace($namespace);
        if (!$this->calls->input()->isLockId($id) || !$this->calls->input()->isLockToken($token)) {
            return false;
        }
        $r = $this->calls->callNamed('held', $namespace, ['id' => $id, 'token' => $token], [], true);
        return (int) ($r[1] ?? 0) === 1;
    }

    /** Drops a lock whatever its holds, without its token (administrators). */
    public function forceRelease(string $namespace, string $id): bool
    {
        Input::checkNamespace($namespace);
        if (!$this->calls->input()->isLockId($id)) {
            return false;
        }
        return $this->calls->callNamed('force_release', $namespace, ['id' => $id])[0] === 'released';
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
        Input::checkNamespace($namespace);
        $prefix = Input::resolvePrefix($prefix);
        $this->calls->input()->checkLimit($limit, 'list_limit');
        Input::checkCursor($after);
        return Codec::listPage($this->calls->callNamed('list', $namespace, ['prefix' => $prefix, 'limit' => (string) $limit, 'after' => $after]));
    }

    /**
     * Why would a request for $op on $targets be refused now? Every live
     * held lock and place in line that refuses it; takes nothing.
     *
     * With $converts (a lock id; since 1.1.0, protocol 4.6), the dry run of
     * a conversion of that lock to $op on $targets (convert()), judged as
     * the conversion is: never the lock itself, nor its own place in line,
     * nor a place in line the lock as it is now refuses; $fair false asks
     * the held locks only (the limit then counts them only). No token is
     * needed; an id that names no live lock leaves nothing out. $fair false
     * without $converts is an InvalidRequestException; a library older
     * than 4.6 a BackendException.
     *
     * @param array<string,string>|list<string> $targets
     */
    public function blockers(
        string $namespace,
        string $op,
        array $targets,
        int $limit = self::MAX_BLOCKERS,
        ?string $converts = null,
        bool $fair = true,
    ): BlockersPage {
        Input::checkNamespace($namespace);
        $paths = $this->calls->input()->resolveTargets($op, $targets);
        $this->calls->input()->checkLimit($limit, 'blockers_limit');
        $values = ['op' => $op, 'limit' => (string) $limit];
        if ($converts !== null) {
            $this->calls->input()->checkId($converts, 'converts');
            $this->requireConversionDryRun();
            $values += ['converts' => $converts, 'fair' => $fair ? '1' : '0'];
        } elseif (!$fair) {
            throw new InvalidRequestException('fair: false goes with converts (the dry run of a conversion)');
        }
        try {
            return Codec::blockersPage($this->calls->callNamed('blockers', $namespace, $values, $paths, true));
        } catch (InvalidRequestException $e) {
            throw $this->calls->input()->withPaths($e, $op, $paths);
        }
    }

    /** A BackendException unless the library's blockers takes `converts` (protocol 4.6). */
    private function requireConversionDryRun(): void
    {
        foreach ($this->contract()->optionalGroups('blockers') as $group) {
            if (in_array('converts', $group, true)) {
                return;
            }
        }
        throw new BackendException(sprintf(
            "the library (protocol %s) has no dry run of a conversion: blockers' converts needs protocol 4.6",
            $this->contract()->protocol,
        ));
    }

    /**
     * The places in line with a path at or inside $prefix, oldest first.
     *
     * @return list<WaiterInfo>
     */
    public function waiters(string $namespace, string $prefix = '/', int $limit = self::MAX_WAITERS): array
    {
        Input::checkNamespace($namespace);
        $prefix = Input::resolvePrefix($prefix);
        $this->calls->input()->checkLimit($limit, 'waiters_limit');
        return Codec::waiters($this->calls->callNamed('waiters', $namespace, ['prefix' => $prefix, 'limit' => (string) $limit], [], true));
    }

    // --- limits per namespace (Limits, DefaultLimits; administrators) -----------

    /**
     * Gives $namespace limits of its own, which replace the default whole at
     * once for every client; null takes them away. Its keys then do not
     * expire while it is idle.
     */
    public function setLimits(string $namespace, ?Limits $limits): void
    {
        Input::checkNamespace($namespace);
        $this->calls->callNamed('set_limits', $namespace, ['limits' => $limits?->text() ?? '']);
    }

    /** The limits in force in $namespace and its use of them (read-only; the default read afresh). */
    public function limits(string $namespace): LimitsStatus
    {
        Input::checkNamespace($namespace);
        return LimitsStatus::fromReply($this->calls->callNamed('limits_ro', $namespace, [], [], true), $this->defaultLimits(true));
    }

    /** Sets the default limits of every namespace without its own (SET, or DEL for none); every client sees them within 5 s, this one at once. */
    public function setDefaultLimits(Limits $limits): void
    {
        $this->defaults->write($this->calls->transport->connection, $this->contract(), $limits);
    }

    /** Where the one warning goes when the user may not read the default limits (default: error_log). */
    public function setWarningHandler(?callable $warn): void
    {
        $this->defaults->setWarningHandler($warn);
    }

    /** Takes a place out of the line (harmless when it is gone). */
    public function leave(string $namespace, string $waiterId): bool
    {
        Input::checkNamespace($namespace);
        $this->calls->input()->checkId($waiterId, 'waiter_id');
        $r = $this->calls->callNamed('leave', $namespace, ['waiter_id' => $waiterId]);
        return (int) ($r[1] ?? 0) === 1;
    }

    /**
     * The keys of a namespace, in the order every function takes them, as
     * $contract names them (Contract::keys()); without one, as the contract
     * embedded in the shipped library (Library::bundled()) names them.
     *
     * @deprecated an engine's keys are its library's: `$engine->contract()->keys($ns)`
     * @return list<string>
     */
    public static function keys(string $namespace, ?Contract $contract = null): array
    {
        return ($contract ?? Contract::fromJson(Library::bundled()->embeddedContract()))->keys($namespace);
    }

    public static function checkNamespace(string $ns): void
    {
        Input::checkNamespace($ns);
    }

    // --- internals -----------------------------------------------------------

    /** The default limits' text for an acquire ('' when none; DefaultLimits). */
    private function defaultLimits(bool $fresh = false): string
    {
        return $this->defaults->text($this->contract(), $this->calls->transport->get(...), $fresh);
    }
}
