<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * A real Redis Sentinel on a free loopback port watching one master
 * (`sentinel monitor MASTER 127.0.0.1 PORT 1`), started for a test class
 * and stopped afterwards, on another port when it does not start (a port
 * taken meanwhile); ready once it names the master.
 */
final class SentinelServer
{
    /** @var resource */
    private $process;
    public readonly int $port;
    private string $dir;

    /** @param int $downAfterMs how long the master may not answer before the sentinel fails it over */
    public function __construct(int $masterPort, public readonly string $masterName = 'pathlockmaster', int $downAfterMs = 30000)
    {
        $binary = getenv('PATHLOCK_REDIS_SERVER') ?: 'redis-server';
        $this->dir = sys_get_temp_dir() . '/pathlock-php-sentinel-' . bin2hex(random_bytes(6));
        mkdir($this->dir);
        for ($try = 0; ; $try++) {
            $port = Ports::free();
            file_put_contents("{$this->dir}/sentinel.conf", "port $port\nbind 127.0.0.1\ndir {$this->dir}\n"
                . "logfile {$this->dir}/sentinel.log\nsentinel monitor $masterName 127.0.0.1 $masterPort 1\n"
                . "sentinel down-after-milliseconds $masterName $downAfterMs\n");
            $process = proc_open([$binary, "{$this->dir}/sentinel.conf", '--sentinel'],
                [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
            if ($process === false) {
                throw new \RuntimeException("cannot start $binary --sentinel");
            }
            if ($this->waitReady($port, $process)) {
                $this->process = $process;
                $this->port = $port;
                return;
            }
            proc_terminate($process);
            proc_close($process);
            if ($try >= 4) {
                throw new \RuntimeException("the sentinel did not start; see {$this->dir}/sentinel.log");
            }
        }
    }

    public function stop(): void
    {
        if (isset($this->process) && is_resource($this->process)) {
            proc_terminate($this->process);
            proc_close($this->process);
        }
        if (is_dir($this->dir)) {
            exec('rm -rf ' . escapeshellarg($this->dir));
        }
    }

    public function __destruct()
    {
        $this->stop();
    }

    /**
     * A failover to the replica on $replicaPort, until the sentinel names it
     * (at most 30 s): with $ask, SENTINEL FAILOVER (asked again while the
     * sentinel does not know the replica yet); else the sentinel's own, once
     * the master has not answered for $downAfterMs.
     */
    public function failOverTo(int $replicaPort, bool $ask = true): void
    {
        $s = new \RedisSentinel('127.0.0.1', $this->port, 2.0, null, 0, 5.0);
        $asked = !$ask;
        for ($i = 0; $i < 300; $i++) {
            $address = $s->getMasterAddrByName($this->masterName);
            if (is_array($address) && (int) $address[1] === $replicaPort) {
                return;
            }
            if (!$asked) {
                $asked = $s->failover($this->masterName) === true;   // NOGOODSLAVE until it knows the replica
            }
            usleep(100000);
        }
        throw new \RuntimeException("no failover to port $replicaPort; see {$this->dir}/sentinel.log");
    }

    /**
     * Until the sentinel of $process names the master (at most 10 s); false
     * when it exits first (e.g. its port was taken meanwhile).
     *
     * @param resource $process
     */
    private function waitReady(int $port, $process): bool
    {
        $ours = false;
        for ($i = 0; $i < 400; $i++) {
            if (!proc_get_status($process)['running']) {
                return false;
            }
            try {
                if (!$ours) {
                    $r = new \Redis();
                    $ours = @$r->connect('127.0.0.1', $port, 0.2, null, 0, 1.0) && Ports::servedBy($r, $process);
                    $r->close();
                }
                if ($ours && is_array((new \RedisSentinel('127.0.0.1', $port, 0.2, null, 0, 1.0))->getMasterAddrByName($this->masterName))) {
                    return true;
                }
            } catch (\RedisException) {
            }
            usleep(25000);
        }
        return false;
    }
}
