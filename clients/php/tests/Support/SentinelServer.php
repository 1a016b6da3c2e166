<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * A Sentinel deployment on free loopback ports from the launcher
 * (`pathlock-testenv sentinel`, TestEnv): a master, $replicas replicas of it
 * and one sentinel watching it (quorum 1), started for a test class and
 * stopped afterwards; ready once the sentinel names the master and knows
 * its replicas.
 */
final class SentinelServer
{
    private TestEnv $env;
    /** The sentinel's port. */
    public readonly int $port;
    public readonly RedisServer $master;
    /** The first replica (null without replicas). */
    public readonly ?RedisServer $replica;

    /**
     * @param int $downAfterMs how long the master may not answer before the sentinel fails it over
     * @param list<string> $args more options for the master and replicas (not the sentinel)
     */
    public function __construct(public readonly string $masterName = 'pathlockmaster', int $downAfterMs = 30000,
        int $replicas = 0, array $args = [])
    {
        $this->env = new TestEnv('sentinel', ['--master-name', $masterName, '--down-after-ms', (string) $downAfterMs,
            '--replicas', (string) $replicas, '--sentinels', '1'], $args);
        $this->port = $this->env->info['ports'][0];
        $this->master = new RedisServer(null, [], $this->env, 'master');
        $this->replica = $replicas > 0 ? new RedisServer(null, [], $this->env, 'replica0') : null;
    }

    /** Stops every server of the deployment and removes their directory. */
    public function stop(): void
    {
        $this->env->stop();
    }

    /**
     * A failover to the replica on $replicaPort, until the sentinel names it
     * (at most 30 s): with $ask, SENTINEL FAILOVER (asked again while the
     * sentinel answers no); else the sentinel's own, once the master has not
     * answered for $downAfterMs.
     */
    public function failOverTo(int $replicaPort, bool $ask = true): void
    {
        $s = new \RedisSentinel('127.0.0.1', $this->port, 2.0, null, 0, 5.0);
        $asked = !$ask;
        Wait::until(function () use ($s, $replicaPort, &$asked): bool {
            $address = $s->getMasterAddrByName($this->masterName);
            if (is_array($address) && (int) $address[1] === $replicaPort) {
                return true;
            }
            if (!$asked) {
                $asked = $s->failover($this->masterName) === true;
            }
            return false;
        }, "a failover to port $replicaPort; see {$this->env->server('sentinel0')['log']}", 30.0);
    }
}
