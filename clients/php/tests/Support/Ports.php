<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * Free loopback ports for the servers the tests start, and whether the
 * server that answers on one is the process a test started (not another
 * test's that took the port meanwhile). Every launcher of tests/Support
 * draws here, and tries another port when its server does not start.
 */
final class Ports
{
    /**
     * The highest port a Redis Cluster node may listen on: its cluster bus
     * listens on port + 10000 (no --cluster-port is given), which must be a
     * port too; redis-server refuses to start above it.
     */
    public const CLUSTER_MAX = 65535 - 10000;

    /** A loopback port that was free a moment ago (the OS's choice). */
    public static function free(): int
    {
        $s = stream_socket_server('tcp://127.0.0.1:0', $errno, $errstr);
        if ($s === false) {
            throw new \RuntimeException("no free port: $errstr");
        }
        $name = (string) stream_socket_get_name($s, false);
        fclose($s);
        return (int) substr($name, strrpos($name, ':') + 1);
    }

    /**
     * A free port for a Redis Cluster node: at most CLUSTER_MAX, drawn again
     * while the OS gives one above it, and its bus port (port + 10000) free
     * a moment ago too.
     */
    public static function freeCluster(): int
    {
        for ($i = 0; $i < 200; $i++) {
            $port = self::free();
            if ($port <= self::CLUSTER_MAX) {
                $bus = @stream_socket_server('tcp://127.0.0.1:' . ($port + 10000), $errno, $errstr);
                if ($bus !== false) {
                    fclose($bus);
                    return $port;
                }
            }
        }
        throw new \RuntimeException('no free port pair (port, port + 10000) with port <= ' . self::CLUSTER_MAX);
    }

    /**
     * Whether the server $r is connected to is the redis-server (or
     * sentinel) of $process: INFO names its process id.
     *
     * @param resource $process from proc_open with an argument list (no shell between)
     */
    public static function servedBy(\Redis $r, $process): bool
    {
        $info = $r->info('server');
        return is_array($info) && (int) ($info['process_id'] ?? 0) === proc_get_status($process)['pid'];
    }
}
