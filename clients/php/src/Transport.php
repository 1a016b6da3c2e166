<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\TimeoutException;

/**
 * @internal Topology and connection (as src/redis/redis_client.cpp is for
 * the C++ engine): which Connection a URL means, one function call sent
 * through it, the read timeout of one call, and what a lost reply means
 * (BackendException, or TimeoutException after the whole read timeout).
 */
final class Transport
{
    public function __construct(public readonly Connection $connection)
    {
    }

    /**
     * The Connection for $url (LockEngine::openConnection()): a Sentinel's
     * master, a Cluster from its seeds (or one node that says so), or one server.
     *
     * @param array<string,mixed> $tlsOptions
     */
    public static function open(string $url, float $connectTimeout, float $commandTimeout, array $tlsOptions): Connection
    {
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

    /**
     * One FCALL (or FCALL_RO) of $function with $keys and $args, routed by
     * its first key. `ERR Function not found` (the call did not run):
     * $reload() loads the library and the call is sent once more. Any other
     * failure is thrown; a call whose reply was lost is never sent again.
     *
     * @param list<string> $keys
     * @param list<string> $args
     * @param \Closure(): void $reload
     */
    public function fcall(string $name, string $function, array $keys, array $args, bool $readOnly, \Closure $reload): mixed
    {
        for ($try = 0; ; $try++) {
            $start = self::nowMs();
            try {
                $r = $this->connection->command(
                    $keys[0] ?? null,   // the namespace's slot (all its keys share its hash tag)
                    $readOnly ? 'FCALL_RO' : 'FCALL',
                    $function,
                    (string) count($keys),
                    ...$keys,
                    ...$args,
                );
            } catch (\RedisException $e) {
                throw $this->lostReply($name, $start, $e);
            }
            if ($r !== false) {
                return $r;
            }
            $err = $this->connection->lastError();
            if ($try === 0 && str_starts_with($err, 'ERR Function not found')) {
                $reload();
                continue;
            }
            throw new BackendException("redis: $name: " . ($err !== '' ? $err : 'no reply'));
        }
    }

    /**
     * GET $key on the server of its slot, for DefaultLimits::text(): [its
     * value (null when missing), ''] or [false, the error] for an error reply.
     *
     * @return array{mixed, string}
     */
    public function get(string $key): array
    {
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
    }

    /**
     * $call with the connection's read timeout set to $ms (restored after).
     *
     * @template T
     * @param callable(): T $call
     * @return T
     */
    public function withReadTimeout(float $ms, callable $call): mixed
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

    /**
     * How long (ms) an attempt waits for its answer: the command timeout,
     * or up to $until (nowMs() clock) + $marginMs.
     */
    public function budgetMs(?float $until, float $marginMs): float
    {
        $command = $this->connection->readTimeout() * 1000;
        $command = $command > 0 ? $command : INF;
        return $until === null ? $command : min($command, max(0.0, $until - self::nowMs()) + $marginMs);
    }

    /**
     * The exception of a call that got no reply: TimeoutException when it
     * waited its whole read timeout (phpredis says "read error" either way).
     */
    public function lostReply(string $fn, float $start, \RedisException $e): BackendException
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

    /** Milliseconds of a monotonic clock. */
    public static function nowMs(): float
    {
        return hrtime(true) / 1e6;
    }
}
