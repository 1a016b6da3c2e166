<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * A real redis-server on a free loopback port, started for a test class and
 * stopped afterwards (no persistence, nothing left behind); on other ports
 * when it does not start (a port taken meanwhile), ready once it answers.
 */
final class RedisServer
{
    /** @var resource */
    private $process;
    public readonly int $port;
    public readonly string $url;
    /** The TLS port (0 without $tlsDir). */
    public readonly int $tlsPort;
    private string $dir;

    /**
     * @param string|null $tlsDir a folder of make_test_certs.sh's certificates: also listen with TLS on
     *   $tlsPort (server.crt, signed by ca.crt), asking clients for a certificate signed by ca.crt
     * @param list<string> $args more options for redis-server (e.g. `--replicaof HOST PORT`)
     */
    public function __construct(?string $tlsDir = null, array $args = [])
    {
        $binary = getenv('PATHLOCK_REDIS_SERVER') ?: 'redis-server';
        $this->dir = sys_get_temp_dir() . '/pathlock-php-redis-' . bin2hex(random_bytes(6));
        mkdir($this->dir);
        for ($try = 0; ; $try++) {
            $port = Ports::free();
            $cmd = [$binary, '--port', (string) $port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
                '--dir', $this->dir, '--logfile', $this->dir . '/redis.log', ...$args];
            $tlsPort = $tlsDir === null ? 0 : Ports::free();
            if ($tlsDir !== null) {
                array_push($cmd, '--tls-port', (string) $tlsPort, '--tls-cert-file', "$tlsDir/server.crt",
                    '--tls-key-file', "$tlsDir/server.key", '--tls-ca-cert-file', "$tlsDir/ca.crt", '--tls-auth-clients', 'yes');
            }
            $process = proc_open($cmd, [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
            if ($process === false) {
                throw new \RuntimeException("cannot start $binary");
            }
            if (self::waitReady($port, $process)) {
                $this->process = $process;
                $this->port = $port;
                $this->tlsPort = $tlsPort;
                $this->url = "redis://127.0.0.1:$port";
                return;
            }
            proc_terminate($process);
            proc_close($process);
            if ($try >= 4) {
                throw new \RuntimeException("redis-server did not start; see {$this->dir}/redis.log");
            }
        }
    }

    public function client(): \Redis
    {
        $r = new \Redis();
        $r->connect('127.0.0.1', $this->port, 2.0, null, 0, 5.0);
        return $r;
    }

    public function stop(): void
    {
        if (isset($this->process) && is_resource($this->process)) {
            proc_terminate($this->process);
            proc_close($this->process);
        }
        foreach (glob($this->dir . '/*') ?: [] as $f) {
            @unlink($f);
        }
        @rmdir($this->dir);
    }

    public function __destruct()
    {
        $this->stop();
    }

    /** @param resource $process */
    private static function waitReady(int $port, $process): bool
    {
        for ($i = 0; $i < 200; $i++) {
            if (!proc_get_status($process)['running']) {
                return false;
            }
            $r = new \Redis();
            try {
                if (@$r->connect('127.0.0.1', $port, 0.2, null, 0, 1.0) && Ports::servedBy($r, $process)) {
                    $r->close();
                    return true;
                }
            } catch (\RedisException) {
            }
            usleep(25000);
        }
        return false;
    }
}
