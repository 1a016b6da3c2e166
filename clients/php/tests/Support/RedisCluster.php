<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * A real three-master Redis Cluster on free loopback ports from the launcher
 * (`pathlock-testenv cluster`, TestEnv), started for a test class and stopped
 * afterwards: ready once every node says `cluster_state:ok` and knows every
 * slot and node. With $tlsDir (make_test_certs.sh's certificates) every node
 * speaks only TLS, the cluster bus too, and asks clients for a certificate.
 */
final class RedisCluster
{
    private TestEnv $env;
    /** @var list<int> */
    public array $ports = [];

    public function __construct(int $masters = 3, private readonly ?string $tlsDir = null)
    {
        $this->env = new TestEnv('cluster', ['--masters', (string) $masters, ...($tlsDir === null ? [] : ['--tls-dir', $tlsDir])]);
        $this->ports = $this->env->info['ports'];
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
        $this->env->stop();
    }
}
