<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * A free loopback port for a test that needs one nobody listens on. The
 * servers' ports come from the launcher (TestEnv), which keeps a Cluster
 * node's at most CLUSTER_MAX.
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
}
