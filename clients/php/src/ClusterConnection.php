<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;

/**
 * A Connection to a Redis Cluster through a phpredis \RedisCluster
 * (docs/php.md "Deployments").
 *
 * Routing: phpredis sends `rawCommand($key, ...)` to the master of the key's
 * slot (a MOVED or ASK it does not follow: see command()); a function call names its
 * namespace's first key, and the nine keys share the hash tag `{NS}`, so a
 * call touches one slot. FUNCTION LOAD goes to each master (`_masters()`).
 *
 * Wake-ups: phpredis has no sharded pub/sub, so WakeSubscription opens its
 * own socket, here to the master that serves the channel's slot: the slot
 * is computed (CRC16 of the hash tag, as Redis does), its master read from
 * `CLUSTER SLOTS`, and a `MOVED` answer to SSUBSCRIBE (the map was already
 * old) is followed. When the slot leaves that master, Redis ends the
 * subscription (a `sunsubscribe` message); the waiting acquire then
 * subscribes again, resolving the master anew.
 *
 * What phpredis 5.3 cannot do here: change a RedisCluster's read timeout
 * after it was made (setOption(OPT_READ_TIMEOUT) does not reach the node
 * sockets), so every call waits up to the timeout given at construction.
 */
final class ClusterConnection implements Connection
{
    private string $error = '';
    private readonly float $readTimeout;

    /**
     * @param Endpoint $login the login and TLS of the subscription sockets (user, password, tls, tlsOptions,
     *   timeouts; its host and port are not used): phpredis does not tell them back
     */
    public function __construct(private readonly \RedisCluster $cluster, private readonly Endpoint $login = new Endpoint('')) {
        $this->readTimeout = (float) $cluster->getOption(\Redis::OPT_READ_TIMEOUT);
    }

    /**
     * A \RedisCluster from seeds (one or more nodes of the cluster), logged
     * in as the first seed says, with TLS when it is `rediss://` (its
     * tlsOptions as RedisCluster's `context`: phpredis 5.3 turns TLS on for
     * any context given and reads the SSL options from it directly).
     *
     * @param non-empty-list<Endpoint> $seeds
     * @throws BackendException when no seed answers with the cluster's slot map
     */
    public static function open(array $seeds): self
    {
        $first = $seeds[0];
        foreach ($seeds as $seed) {
            if ($seed->db !== 0) {
                throw new InvalidRequestException('a Redis Cluster has only database 0 (the URL names ' . $seed->db . ')');
            }
        }
        $auth = $first->password === null ? null : ($first->user !== null ? [$first->user, $first->password] : $first->password);
        $addresses = array_map(fn(Endpoint $e): string => (str_contains($e->host, ':') ? "[{$e->host}]" : $e->host) . ':' . $e->port, $seeds);
        try {
            $cluster = @new \RedisCluster(null, $addresses, $first->connectTimeout, $first->commandTimeout, false, $auth,
                $first->tls ? $first->tlsOptions : null);   // 5.3: the SSL options themselves (\Redis: under 'stream')
        } catch (\RedisClusterException $e) {
            throw new BackendException('redis cluster at ' . implode(',', $addresses) . ': ' . $e->getMessage(), 0, $e);
        }
        return new self($cluster, $first);
    }

    /** Whether the server $redis talks to is a Cluster node (`INFO cluster` says `cluster_enabled:1`). */
    public static function isClusterNode(\Redis $redis): bool
    {
        try {
            $info = $redis->rawCommand('INFO', 'cluster');
        } catch (\RedisException) {
            return false;
        }
        return is_string($info) && str_contains($info, 'cluster_enabled:1');
    }

    public function command(string|array|null $route, string ...$words): mixed
    {
        $route ??= $this->masters()[0];
        $this->cluster->clearLastError();
        $before = $this->cluster->_redir();
        try {
            $r = $this->cluster->rawCommand($route, ...$words);
        } catch (\RedisClusterException $e) {
            $r = $this->redirected($route, $before, $words, $e);
        }
        $this->error = $r === false ? (string) ($this->cluster->getLastError() ?? '') : '';
        return $r;
    }

    /**
     * phpredis 5.3's rawCommand does not follow MOVED or ASK: it throws
     * "Unable to send command to the specified node" (as for a lost reply)
     * and keeps the address it was sent to in _redir(). A new address there
     * means the server redirected and did not run the command: it is sent
     * there (after ASKING, which a MOVED target ignores), and a typed
     * command on the key (EXISTS, which phpredis routes itself) teaches
     * phpredis's slot map the new master. The same address as before may be
     * an old redirection: then only a command that changes nothing is sent
     * again, an FCALL is a lost reply (the map is updated all the same, so
     * the next call finds the new master).
     *
     * @param string|array{string,int} $route
     * @param list<string> $words
     */
    private function redirected(string|array $route, ?string $before, array $words, \RedisClusterException $e): mixed
    {
        $to = $this->cluster->_redir();
        if (!is_string($route) || !is_string($to) || preg_match('/\A\[?(.+?)\]?:(\d+)\z/', $to, $m) !== 1) {
            throw new \RedisException($e->getMessage(), 0, $e);
        }
        $harmless = in_array(strtoupper($words[0]), ['FCALL_RO', 'TIME', 'CLUSTER', 'FUNCTION', 'GET'], true);
        try {
            @$this->cluster->exists($route);
            if ($to === $before && !$harmless) {
                throw new \RedisException($e->getMessage() . ' (the call may have run)', 0, $e);
            }
            $this->cluster->clearLastError();
            $node = [$m[1], (int) $m[2]];
            $this->cluster->rawCommand($node, 'ASKING');
            return $this->cluster->rawCommand($node, ...$words);
        } catch (\RedisClusterException $again) {
            throw new \RedisException($again->getMessage(), 0, $again);
        }
    }

    public function lastError(): string
    {
        return $this->error;
    }

    public function masters(): array
    {
        return array_map(fn(array $m): array => [(string) $m[0], (int) $m[1]], $this->cluster->_masters());
    }

    public function readTimeout(): float
    {
        return $this->readTimeout;
    }

    public function setReadTimeout(float $seconds): bool
    {
        return false;   // phpredis 5.3: a RedisCluster keeps the read timeout it was made with
    }

    public function drop(): void
    {
        try {
            $this->cluster->close();
        } catch (\RedisClusterException) {
        }
    }

    public function subscribe(string $channel): WakeSubscription
    {
        [$host, $port] = $this->masterOf(self::slot($channel), $channel);
        for ($hop = 0; ; $hop++) {
            try {
                return WakeSubscription::open($this->login->withAddress($host, $port), $channel);
            } catch (BackendException $e) {
                // The slot moved since the map was read: SSUBSCRIBE answers MOVED with its master.
                if ($hop >= 2 || preg_match('/MOVED \d+ (\S+):(\d+)/', $e->getMessage(), $m) !== 1) {
                    throw $e;
                }
                [$host, $port] = [trim($m[1], '[]'), (int) $m[2]];
            }
        }
    }

    /**
     * The hash slot of $key, as Redis computes it: CRC16 (XMODEM) of the
     * hash tag (the text between the first `{` and the next `}`, when not
     * empty) or of the whole key, modulo 16384.
     */
    public static function slot(string $key): int
    {
        $open = strpos($key, '{');
        if ($open !== false) {
            $close = strpos($key, '}', $open + 1);
            if ($close !== false && $close > $open + 1) {
                $key = substr($key, $open + 1, $close - $open - 1);
            }
        }
        $crc = 0;
        for ($i = 0, $n = strlen($key); $i < $n; $i++) {
            $crc ^= ord($key[$i]) << 8;
            for ($bit = 0; $bit < 8; $bit++) {
                $crc = ($crc & 0x8000) !== 0 ? (($crc << 1) ^ 0x1021) & 0xFFFF : ($crc << 1) & 0xFFFF;
            }
        }
        return $crc & 16383;
    }

    /**
     * The master serving $slot, from `CLUSTER SLOTS` (asked of the node
     * phpredis sends $key to).
     *
     * @return array{string,int}
     */
    private function masterOf(int $slot, string $key): array
    {
        try {
            $ranges = $this->command($key, 'CLUSTER', 'SLOTS');
        } catch (\RedisException $e) {
            throw new BackendException('redis: CLUSTER SLOTS: ' . $e->getMessage(), 0, $e);
        }
        foreach (is_array($ranges) ? $ranges : [] as $range) {
            if (is_array($range) && $slot >= (int) $range[0] && $slot <= (int) $range[1] && is_array($range[2] ?? null)) {
                $host = (string) $range[2][0];
                return [$host !== '' ? $host : $this->masters()[0][0], (int) $range[2][1]];
            }
        }
        throw new BackendException("redis: CLUSTER SLOTS names no master for slot $slot" . ($ranges === false ? ': ' . $this->error : ''));
    }
}
