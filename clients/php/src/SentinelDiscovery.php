<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;

/**
 * Finds a Sentinel-monitored master:
 * `redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/DB]#MASTER`
 * (port 26379 by default). The sentinels are asked in turn
 * (`SENTINEL get-master-addr-by-name MASTER`, phpredis's RedisSentinel);
 * the first answer is the master, logged into with the URL's user and
 * password and database.
 *
 * What phpredis 5.3 cannot do: its RedisSentinel takes no password and no
 * TLS, so the sentinels must accept plain connections without AUTH (the
 * master may ask for either). SentinelConnection asks again after a
 * failover.
 */
final class SentinelDiscovery
{
    /** Whether $url is a `redis-sentinel://` URL. */
    public static function isSentinelUrl(string $url): bool
    {
        return preg_match('#\A(redis|rediss)-sentinel://#i', $url) === 1;
    }

    /**
     * The master's endpoint, as the first sentinel that knows it says.
     *
     * @param array<string,mixed> $tlsOptions
     * @throws InvalidRequestException a malformed URL
     * @throws BackendException no sentinel answered with the master's address
     */
    public static function master(string $url, float $connectTimeout = 2.0, float $commandTimeout = 2.0, array $tlsOptions = []): Endpoint
    {
        if (preg_match('#\A(redis|rediss)-sentinel://([^@/\#]*@)?([^/@\#]+)(/\d{1,5})?\#([^\s\#]+)\z#i', $url, $m) !== 1) {
            throw new InvalidRequestException("Redis URL '$url' is not redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/DB]#MASTER");
        }
        if (strtolower($m[1]) === 'rediss') {
            throw new InvalidRequestException('rediss-sentinel:// is not supported: phpredis 5.3 has no TLS to a sentinel (RedisSentinel)');
        }
        $problems = [];
        foreach (explode(',', $m[3]) as $sentinel) {
            $at = Endpoint::fromUrl("redis://$sentinel", $connectTimeout, $commandTimeout);
            $port = str_contains($sentinel, ']:') || preg_match('/\A[^:\[]+:\d+\z/', $sentinel) === 1 ? $at->port : 26379;
            try {
                $address = (new \RedisSentinel($at->host, $port, $connectTimeout, null, 0, $commandTimeout))->getMasterAddrByName($m[5]);
            } catch (\RedisException $e) {
                $problems[] = "{$at->host}:$port: " . $e->getMessage();
                continue;
            }
            if (is_array($address) && count($address) === 2) {
                $host = str_contains((string) $address[0], ':') ? "[{$address[0]}]" : (string) $address[0];
                return Endpoint::fromUrl("redis://{$m[2]}$host:{$address[1]}" . ($m[4] ?? ''), $connectTimeout, $commandTimeout, $tlsOptions);
            }
            $problems[] = "{$at->host}:$port does not know a master named '{$m[5]}'";
        }
        throw new BackendException('no sentinel gave the master: ' . implode('; ', $problems));
    }
}
