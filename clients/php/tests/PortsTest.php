<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Tests\Support\Ports;
use PHPUnit\Framework\TestCase;

/** The ports tests/Support draws for the servers it starts. */
final class PortsTest extends TestCase
{
    /** A Cluster node's bus listens on its port + 10000, which must be a port too: 2000 draws. */
    public function testFreeClusterPortsLeaveRoomForTheBusPort(): void
    {
        for ($i = 0; $i < 2000; $i++) {
            $port = Ports::freeCluster();
            if ($port < 1 || $port > Ports::CLUSTER_MAX || $port + 10000 > 65535) {
                $this->fail("Ports::freeCluster() gave $port: its bus port " . ($port + 10000) . ' is not a port');
            }
        }
        $this->assertSame(55535, Ports::CLUSTER_MAX);
    }
}
