<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;

/**
 * The default limits of every namespace as one LockEngine last read them:
 * the plain string key the contract names (`default_limits_key`,
 * pl:limits), read at most every `default_limits_refresh_ms` (5 s) and
 * sent with each acquire, as the C++ engine does (src/redis/limits.cpp). A
 * library older than protocol 4.3 takes none: nothing is read or sent.
 */
final class DefaultLimits
{
    private string $text = '';
    private float $readAt = -INF;
    private bool $warned = false;
    private bool $unreachable = false;
    /** @var \Closure(string): void */
    private \Closure $warn;

    /** @param (callable(string): void)|null $warn gets the one warning (default: error_log) */
    public function __construct(?callable $warn = null)
    {
        $this->setWarningHandler($warn);
    }

    /** @param (callable(string): void)|null $warn */
    public function setWarningHandler(?callable $warn): void
    {
        $this->warn = $warn !== null ? \Closure::fromCallable($warn) : static fn(string $m) => error_log("pathlock: $m");
    }

    /**
     * The text to send with an acquire ('' when none), read again when
     * stale (or $fresh). $get(key) GETs the key on the server of its slot: its
     * value (null when missing), or false for an error reply (NOPERM: the
     * user may not read it; its message second), which counts as none, with
     * one warning. A value this client cannot read (another tool's) counts as
     * none too.
     *
     * @param callable(string): array{mixed, string} $get the reply and the error message
     */
    public function text(Contract $contract, callable $get, bool $fresh = false): string
    {
        if (!$contract->atLeast('4.3')) {
            return '';
        }
        $refresh = $contract->limits['default_limits_refresh_ms'] ?? 5000;
        if (!$fresh && self::nowMs() - $this->readAt < $refresh) {
            return $this->text;
        }
        $key = self::key($contract);
        try {
            [$v, $error] = $get($key);
        } catch (Exception\BackendException $e) {
            // The key's node cannot be reached (a Cluster node down or cut
            // off, which the namespace's need not be): the last text read
            // stays, read again after the refresh period; the acquire goes
            // on (a limit protects memory, not a lock), as in every client.
            if (!$this->unreachable) {
                ($this->warn)("could not read the default limits ($key): {$e->getMessage()}; the last default read stays");
            }
            $this->unreachable = true;
            $this->readAt = self::nowMs();
            return $this->text;
        }
        $this->unreachable = false;
        if ($v === false && !$this->warned) {
            $this->warned = true;
            ($this->warn)("this user may not GET $key ($error); no default limits apply to its requests. Grant +get on ~pl:*");
        }
        $this->text = is_string($v) && Limits::parse($v) !== null ? $v : '';
        $this->readAt = self::nowMs();
        return $this->text;
    }

    /**
     * Sets the default on the server (SET, or DEL for no limit at all) and
     * here (LockEngine::setDefaultLimits()).
     */
    public function write(Connection $connection, Contract $contract, Limits $limits): void
    {
        $text = $limits->isNone() ? '' : $limits->text();
        $key = self::key($contract);
        try {
            $r = $text === '' ? $connection->command($key, 'DEL', $key) : $connection->command($key, 'SET', $key, $text);
        } catch (\RedisException $e) {
            throw new BackendException("redis: SET $key: " . $e->getMessage(), 0, $e);
        }
        if ($r === false) {
            throw new BackendException("redis: SET $key: " . $connection->lastError());
        }
        $this->text = $text;
        $this->readAt = self::nowMs();
    }

    /** For tests: the next text() reads the key again, as after the refresh period. */
    public function expire(): void
    {
        $this->readAt = -INF;
    }

    /** The key of the default limits, as the contract names it. */
    public static function key(Contract $contract): string
    {
        $c = json_decode($contract->json, true);
        $key = is_array($c) ? ($c['limits']['default_limits_key'] ?? null) : null;
        return is_string($key) && $key !== '' ? $key : 'pl:limits';
    }

    private static function nowMs(): float
    {
        return hrtime(true) / 1e6;
    }
}
