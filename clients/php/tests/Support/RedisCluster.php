<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * A real three-master Redis Cluster on free loopback ports, started for a
 * test class and stopped afterwards: three `redis-server --cluster-enabled
 * yes` joined by `redis-cli --cluster create ... --cluster-replicas 0`,
 * ready once every node says `cluster_state:ok` and knows every slot.
 * With $tlsDir (make_test_certs.sh's certificates) every node speaks only
 * TLS, the cluster bus too, and asks clients for a certificate.
 */
final class RedisCluster
{
    /** @var list<resource> */
    private array $processes = [];
    /** @var list<int> */
    public array $ports = [];
    private string $dir;

    public function __construct(int $masters = 3, private readonly ?string $tlsDir = null)
    {
        $binary = getenv('PATHLOCK_REDIS_SERVER') ?: 'redis-server';
        $this->dir = sys_get_temp_dir() . '/pathlock-php-cluster-' . bin2hex(random_bytes(6));
        mkdir($this->dir);
        try {
            for ($i = 0; $i < $masters; $i++) {
                $this->startNode($binary, $i);
            }
            $this->create();
            $this->waitOk();
        } catch (\Throwable $e) {
            $this->stop();
            throw $e;
        }
    }

    /** `redis://127.0.0.1:P1,127.0.0.1:P2,...`: every node as a seed. */
    public function url(): string
    {
        return ($this->tlsDir === null ? 'redis://' : 'rediss://') . implode(',', array_map(fn(int $p) => "127.0.0.1:$p", $this->ports));
    }

    /** A plain connection to one node (administration: CLUSTER, CLIENT LIST, FUNCTION). */
    public function node(int $port): \Redis
    {
        $r = new \Redis();
        $r->connect(($this->tlsDir === null ? '' : 'tls://') . '127.0.0.1', $port, 2.0, null, 0, 10.0, $this->context());
        return $r;
    }

    /** The SSL context options of a client of a TLS cluster (its CA, a client certificate); [] without TLS. */
    public function tlsOptions(): array
    {
        return $this->tlsDir === null ? [] : ['cafile' => "{$this->tlsDir}/ca.crt",
            'local_cert' => "{$this->tlsDir}/client.crt", 'local_pk' => "{$this->tlsDir}/client.key"];
    }

    private function context(): array
    {
        return $this->tlsDir === null ? [] : ['stream' => $this->tlsOptions()];
    }

    /** The port of the master that serves $key's slot now. */
    public function masterOf(string $key): int
    {
        return $this->masterOfSlot((int) $this->node($this->ports[0])->rawCommand('CLUSTER', 'KEYSLOT', $key));
    }

    /** The port of the master that serves $slot now (as the first node sees it). */
    public function masterOfSlot(int $slot): int
    {
        foreach ($this->node($this->ports[0])->rawCommand('CLUSTER', 'SLOTS') as $range) {
            if ($slot >= (int) $range[0] && $slot <= (int) $range[1]) {
                return (int) $range[2][1];
            }
        }
        throw new \RuntimeException("no master serves slot $slot");
    }

    /**
     * Moves $slot, with its keys, to the master on $to, as `redis-cli
     * --cluster reshard` does: IMPORTING on the target, MIGRATING on the
     * source, MIGRATE of every key, then SETSLOT NODE on every master.
     * Returns $to.
     */
    public function moveSlot(int $slot, int $to): int
    {
        $from = $this->masterOfSlot($slot);
        $source = $this->node($from);
        $this->node($to)->rawCommand('CLUSTER', 'SETSLOT', (string) $slot, 'IMPORTING', $this->nodeId($from));
        $source->rawCommand('CLUSTER', 'SETSLOT', (string) $slot, 'MIGRATING', $this->nodeId($to));
        while (($keys = $source->rawCommand('CLUSTER', 'GETKEYSINSLOT', (string) $slot, '100')) !== []) {
            $ok = $source->rawCommand('MIGRATE', '127.0.0.1', (string) $to, '', '0', '5000', 'KEYS', ...$keys);
            if ($ok !== 'OK' && $ok !== true) {
                throw new \RuntimeException("MIGRATE of slot $slot failed: " . $source->getLastError());
            }
        }
        foreach ([$to, $from, ...array_diff($this->ports, [$to, $from])] as $port) {
            $this->node($port)->rawCommand('CLUSTER', 'SETSLOT', (string) $slot, 'NODE', $this->nodeId($to));
        }
        return $to;
    }

    /** The node id of the node on $port. */
    public function nodeId(int $port): string
    {
        return (string) $this->node($port)->rawCommand('CLUSTER', 'MYID');
    }

    public function stop(): void
    {
        foreach ($this->processes as $p) {
            if (is_resource($p)) {
                proc_terminate($p);
                proc_close($p);
            }
        }
        $this->processes = [];
        if (isset($this->dir) && is_dir($this->dir)) {
            exec('rm -rf ' . escapeshellarg($this->dir));
        }
    }

    public function __destruct()
    {
        $this->stop();
    }

    private function startNode(string $binary, int $i): void
    {
        for ($try = 0; ; $try++) {
            $port = Ports::freeCluster();
            $dir = "{$this->dir}/n$i-$try";
            mkdir($dir);
            $listen = $this->tlsDir === null ? ['--port', (string) $port] : ['--port', '0', '--tls-port', (string) $port,
                '--tls-cluster', 'yes', '--tls-cert-file', "{$this->tlsDir}/server.crt", '--tls-key-file', "{$this->tlsDir}/server.key",
                '--tls-ca-cert-file', "{$this->tlsDir}/ca.crt", '--tls-auth-clients', 'yes'];
            $cmd = [$binary, ...$listen, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
                '--cluster-enabled', 'yes', '--cluster-config-file', "$dir/nodes.conf", '--cluster-node-timeout', '5000',
                '--dir', $dir, '--logfile', "$dir/redis.log"];
            $process = proc_open($cmd, [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
            if ($process === false) {
                throw new \RuntimeException("cannot start $binary");
            }
            if ($this->waitReady($port, $process)) {
                $this->processes[] = $process;
                $this->ports[] = $port;
                return;
            }
            proc_terminate($process);
            proc_close($process);
            if ($try >= 4) {
                throw new \RuntimeException("redis-server did not start; see $dir/redis.log");
            }
        }
    }

    private function create(): void
    {
        $cmd = 'redis-cli --cluster create ' . implode(' ', array_map(fn(int $p) => "127.0.0.1:$p", $this->ports))
            . ' --cluster-replicas 0 --cluster-yes' . ($this->tlsDir === null ? '' : ' --tls --cacert ' . escapeshellarg("{$this->tlsDir}/ca.crt")
                . ' --cert ' . escapeshellarg("{$this->tlsDir}/client.crt") . ' --key ' . escapeshellarg("{$this->tlsDir}/client.key")) . ' 2>&1';
        exec($cmd, $out, $status);
        if ($status !== 0) {
            throw new \RuntimeException("redis-cli --cluster create failed:\n" . implode("\n", $out));
        }
    }

    /** Until every node says cluster_state:ok with all 16384 slots known (at most 30 s). */
    private function waitOk(): void
    {
        $until = microtime(true) + 30;
        while (microtime(true) < $until) {
            $ok = 0;
            foreach ($this->ports as $port) {
                $info = (string) $this->node($port)->rawCommand('CLUSTER', 'INFO');
                if (str_contains($info, 'cluster_state:ok') && str_contains($info, 'cluster_slots_ok:16384')
                    && str_contains($info, 'cluster_known_nodes:' . count($this->ports))) {
                    $ok++;
                }
            }
            if ($ok === count($this->ports)) {
                return;
            }
            usleep(50000);
        }
        throw new \RuntimeException('the cluster did not reach cluster_state:ok within 30 s');
    }

    /** @param resource $process */
    private function waitReady(int $port, $process): bool
    {
        for ($i = 0; $i < 200; $i++) {
            if (!proc_get_status($process)['running']) {
                return false;
            }
            $r = new \Redis();
            try {
                if (@$r->connect(($this->tlsDir === null ? '' : 'tls://') . '127.0.0.1', $port, 0.2, null, 0, 1.0, $this->context())
                    && Ports::servedBy($r, $process)) {
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
