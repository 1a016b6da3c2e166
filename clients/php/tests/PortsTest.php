<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Tests\Support\Ports;
use Pathlock\Tests\Support\TestEnv;
use PHPUnit\Framework\TestCase;

/** The ports the launcher (TestEnv) gives the servers it starts. */
final class PortsTest extends TestCase
{
    /** A Cluster node's bus listens on its port + 10000, which must be a port too (2000 draws: tests/redis_cli). */
    public function testTheLaunchersClusterPortsLeaveRoomForTheBusPort(): void
    {
        $env = new TestEnv('cluster', ['--masters', '3']);
        try {
            $this->assertCount(3, $env->info['ports']);
            foreach ($env->info['ports'] as $port) {
                $this->assertLessThanOrEqual(Ports::CLUSTER_MAX, $port, "a cluster node on $port: its bus port is no port");
            }
        } finally {
            $env->stop();
        }
        $this->assertSame(55535, Ports::CLUSTER_MAX);
    }
}
