<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * A real redis-server on a free loopback port from the launcher
 * (`pathlock-testenv redis`, TestEnv), started for a test class and stopped
 * afterwards (no persistence, nothing left behind); or one server of a
 * launcher's deployment (SentinelServer's master and replica).
 */
final class RedisServer
{
    private TestEnv $env;
    private bool $owned;
    public readonly int $port;
    public readonly string $url;
    /** The TLS port (0 without $tlsDir). */
    public readonly int $tlsPort;

    /**
     * @param string|null $tlsDir a folder of make_test_certs.sh's certificates: also listen with TLS on
     *   $tlsPort (server.crt, signed by ca.crt), asking clients for a certificate signed by ca.crt
     * @param list<string> $args more options for redis-server (e.g. `--repl-diskless-sync-delay 0`)
     * @param TestEnv|null $env a launcher's deployment whose server $name this is (its own launcher when null)
     */
    public function __construct(?string $tlsDir = null, array $args = [], ?TestEnv $env = null, private readonly string $name = 'redis')
    {
        $this->owned = $env === null;
        $this->env = $env ?? new TestEnv('redis', $tlsDir === null ? [] : ['--tls-dir', $tlsDir], $args);
        $s = $this->env->server($name);
        $this->port = $s['port'];
        $this->tlsPort = $s['tls_port'] ?? 0;
        $this->url = "redis://127.0.0.1:{$this->port}";
    }

    public function client(): \Redis
    {
        $r = new \Redis();
        $r->connect('127.0.0.1', $this->port, 2.0, null, 0, 5.0);
        return $r;
    }

    /** Stops the server (and, when it has its own, the launcher, which removes its directory). */
    public function stop(): void
    {
        if ($this->owned) {
            $this->env->stop();
        } else {
            $this->env->command("stop {$this->name}");
        }
    }
}
