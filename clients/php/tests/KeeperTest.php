<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;
use Pathlock\Grant;
use Pathlock\KeptLease;
use Pathlock\LeaseKeeper;
use Pathlock\LockEngine;
use Pathlock\Tests\Support\RedisServer;
use Pathlock\Tests\Support\RedisTestCase;

/** The PHP LeaseKeeper (docs/php.md "Keeping a lease") against a real redis-server. */
final class KeeperTest extends RedisTestCase
{
    private const TTL_MS = 300;

    private function grant(LockEngine $engine, string $path = '/p/keep'): Grant
    {
        $r = $engine->acquire($this->ns, 'alice', 'upload', [$path], ttlMs: self::TTL_MS);
        $this->assertNotNull($r->grant);
        return $r->grant;
    }

    /** The program's work loop: tick(), then block until the next renewal is due, until $until() or $ms pass. */
    private static function workLoop(LeaseKeeper $keeper, int $ms, ?callable $until = null): float
    {
        $start = hrtime(true) / 1e6;
        while (hrtime(true) / 1e6 - $start < $ms && ($until === null || !$until())) {
            $keeper->tick();
            usleep(1000 * min(20, $keeper->dueInMs() ?? 20));
        }
        return hrtime(true) / 1e6 - $start;
    }

    public function testAKeptLeaseOutlivesItsTtl(): void
    {
        $keeper = new LeaseKeeper($this->engine);
        $g = $this->grant($this->engine);
        $lease = $keeper->keep($this->ns, $g, self::TTL_MS);
        self::workLoop($keeper, 4 * self::TTL_MS);
        $this->assertFalse($lease->isLost());
        $this->assertGreaterThanOrEqual(6, $lease->renewals(), 'renewed every third of the TTL');
        $this->assertTrue($this->engine->isHeld($this->ns, $g->id, $g->token));
        $lease->stop();
        $this->assertSame(0, $keeper->count());
        $this->assertNull($keeper->dueInMs());
    }

    public function testALockThatIsGoneIsReportedLostOnce(): void
    {
        $keeper = new LeaseKeeper($this->engine);
        $g = $this->grant($this->engine);
        $calls = [];
        $lease = $keeper->keep($this->ns, $g, self::TTL_MS, function (KeptLease $l) use (&$calls): void {
            $calls[] = $l->lostReason();
        });
        $this->assertTrue($this->engine->forceRelease($this->ns, $g->id));
        $took = self::workLoop($keeper, 10 * self::TTL_MS, fn(): bool => $lease->isLost());
        $this->assertSame([KeptLease::MISSING], $calls);
        $this->assertLessThan(self::TTL_MS, $took, 'at the first renewal, a third of the TTL in');
        self::workLoop($keeper, self::TTL_MS);
        $this->assertSame([KeptLease::MISSING], $calls, 'once');
        $this->assertSame(0, $keeper->count());
    }

    public function testAFailingServerIsRetriedUntilTheLeaseEndsThenLost(): void
    {
        $server = new RedisServer();
        try {
            $engine = LockEngine::connect($server->url, self::library());
            $keeper = new LeaseKeeper($engine, retryMs: 20);
            $g = $this->grant($engine);
            $kept = hrtime(true) / 1e6;
            $lease = $keeper->keep($this->ns, $g, self::TTL_MS);
            $server->stop();   // every renewal fails from now on
            self::workLoop($keeper, 10 * self::TTL_MS, fn(): bool => $lease->isLost());
            $took = hrtime(true) / 1e6 - $kept;
        } finally {
            $server->stop();
        }
        $this->assertSame(KeptLease::EXPIRED, $lease->lostReason());
        $this->assertInstanceOf(BackendException::class, $lease->lastError());
        $this->assertGreaterThanOrEqual(self::TTL_MS, $took, 'not before the lease could have ended');
        $this->assertLessThan(self::TTL_MS + 250, $took);
    }

    public function testAnOnLostThatThrowsLeavesTick(): void
    {
        $keeper = new LeaseKeeper($this->engine);
        $g = $this->grant($this->engine);
        $lease = $keeper->keep($this->ns, $g, self::TTL_MS, function (): void {
            throw new \DomainException('stop the work');
        });
        $this->engine->forceRelease($this->ns, $g->id);
        $this->expectException(\DomainException::class);
        self::workLoop($keeper, 10 * self::TTL_MS, fn(): bool => $lease->isLost());
    }

    /** @requires extension pcntl */
    public function testTickOnAlarmKeepsALeaseWhileTheProgramNeverTicks(): void
    {
        $own = LockEngine::connect(static::$server->url, self::library());   // the handler's connection
        $keeper = new LeaseKeeper($own);
        $g = $this->engine->acquire($this->ns, 'alice', 'upload', ['/p/alarm'], ttlMs: 2000)->grant;
        $lease = $keeper->keep($this->ns, $g, 2000);
        $this->assertTrue($keeper->tickOnAlarm());
        try {
            $start = hrtime(true);
            while (hrtime(true) - $start < 4.5e9) {   // the work: never calls tick(); the signal cuts usleep short
                usleep(100000);
            }
            $this->assertFalse($lease->isLost());
            $this->assertGreaterThanOrEqual(2, $lease->renewals());
            $this->assertTrue($this->engine->isHeld($this->ns, $g->id, $g->token), 'held past twice its TTL');
        } finally {
            $keeper->close();
        }
        $this->assertSame(SIG_DFL, pcntl_signal_get_handler(SIGALRM));
    }

    public function testBadInputIsRefused(): void
    {
        $keeper = new LeaseKeeper($this->engine);
        foreach ([0, -1, 604800001] as $ttl) {
            try {
                $keeper->keep($this->ns, new Grant('x', 'y', 0, 0, 0), $ttl);
                $this->fail("ttl $ttl was taken");
            } catch (InvalidRequestException) {
            }
        }
        $this->assertSame(0, $keeper->count());
        $this->expectException(InvalidRequestException::class);
        new LeaseKeeper($this->engine, renewAfter: 1.0);
    }
}
