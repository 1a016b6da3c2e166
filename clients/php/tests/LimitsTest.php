<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\DefaultLimits;
use Pathlock\Exception\InvalidRequestException;
use Pathlock\Exception\LockRefusedException;
use Pathlock\Exception\OverLimitException;
use Pathlock\LimitRefusal;
use Pathlock\Limits;
use Pathlock\LockEngine;
use Pathlock\Tests\Support\LineProcess;
use Pathlock\Tests\Support\RedisTestCase;
use Pathlock\Tests\Support\Wait;

/**
 * Limits per namespace (protocol 4.3): the semantics are the engine's
 * (tests/conformance/tenant_limits_test.cpp); these check what the PHP
 * client adds: the overLimit outcome, the admin calls, and the default
 * limits read from pl:limits and sent with every acquire.
 */
final class LimitsTest extends RedisTestCase
{
    protected function tearDown(): void
    {
        static::$server->client()->rawCommand('DEL', 'pl:limits');   // the default is the server's: none after each test
    }

    private function assertOverLimit(string $limit, int $max, int $count, \Pathlock\AcquireResult $r): void
    {
        $this->assertEquals(new LimitRefusal($limit, $max, $count), $r->overLimit);
        $this->assertFalse($r->isGranted());
        $this->assertNull($r->conflict);
        $this->assertFalse($r->notHolder || $r->cancelled);
    }

    private function upload(string $owner, string $path, int $waitMs = 0): \Pathlock\AcquireResult
    {
        return $this->engine->acquire($this->ns, $owner, 'upload', [$path], waitMs: $waitMs);
    }

    /** The engine's DefaultLimits, made stale: its next acquire reads pl:limits again. */
    private static function expireDefaults(LockEngine $engine): void
    {
        $defaults = (new \ReflectionProperty(LockEngine::class, 'defaults'))->getValue($engine);
        \assert($defaults instanceof DefaultLimits);
        $defaults->expire();
    }

    public function testANamespacesOwnLimitOnLocksRefusesTheNextNewLockAndTakesNothing(): void
    {
        $this->engine->setLimits($this->ns, new Limits(locks: 3));
        $held = [];
        for ($i = 0; $i < 3; $i++) {
            $held[] = $this->upload('alice', "/t/f$i")->grant;
        }
        $this->assertOverLimit(LimitRefusal::LOCKS, 3, 3, $this->upload('bob', '/t/more'));
        $this->assertSame([], $this->engine->list($this->ns, '/t/more'));
        try {
            $this->engine->lock($this->ns, 'bob', 'upload', ['/t/more']);
            $this->fail('a lock over the limit');
        } catch (OverLimitException $e) {
            $this->assertInstanceOf(LockRefusedException::class, $e);
            $this->assertEquals(new LimitRefusal('locks', 3, 3), $e->refusal);
        }
        // A reentry creates no lock: not limited. The limit is judged before the
        // conflicts: a request that also conflicts is told of the limit.
        $this->assertTrue($this->engine->acquire($this->ns, 'alice', 'upload', ['/t/f0'], reenter: $held[0])->isGranted());
        $this->assertOverLimit(LimitRefusal::LOCKS, 3, 3, $this->engine->acquire($this->ns, 'carol', 'delete_folder', ['/t']));
        $s = $this->engine->limits($this->ns);
        $this->assertEquals([new Limits(), new Limits(3), new Limits(3), 3, 0, 3, 'alice'],
            [$s->defaults, $s->own, $s->effective, $s->locks, $s->places, $s->ownerLocks, $s->owner]);
        // A lock that goes makes room for one; taken away, no limit is left.
        $this->assertTrue($this->engine->release($this->ns, $held[1]->id, $held[1]->token));
        $this->assertTrue($this->upload('bob', '/t/more')->isGranted());
        $this->engine->setLimits($this->ns, null);
        $this->assertTrue($this->upload('bob', '/t/more2')->isGranted());
        $this->assertNull($this->engine->limits($this->ns)->own);
    }

    public function testTheLimitOnOneOwnersLocksRefusesThatOwnerOnly(): void
    {
        $this->engine->setLimits($this->ns, new Limits(ownerLocks: 2));
        $this->upload('alice', '/o/1');
        $this->upload('alice', '/o/2');
        $this->assertOverLimit(LimitRefusal::OWNER_LOCKS, 2, 2, $this->upload('alice', '/o/3'));
        $this->assertTrue($this->upload('bob', '/o/3')->isGranted());
    }

    public function testAWaitingAcquireRefusedByALimitIsAnsweredAtOnce(): void
    {
        $this->engine->setLimits($this->ns, new Limits(locks: 1));
        $this->upload('alice', '/a/1');
        $start = hrtime(true);
        $this->assertOverLimit(LimitRefusal::LOCKS, 1, 1, $this->upload('bob', '/a/2', 20000));
        $this->assertLessThan(10.0, (hrtime(true) - $start) / 1e9);
        $this->assertSame([], $this->engine->waiters($this->ns));
    }

    public function testTheLimitOnPlacesRefusesASecondWaiterAtOnce(): void
    {
        $this->engine->setLimits($this->ns, new Limits(places: 1));
        $g = $this->engine->acquire($this->ns, 'alice', 'delete_folder', ['/p'], ttlMs: 60000)->grant;
        $bob = LineProcess::phpShell(static::$server->url, $this->ns);
        $bob->send('acquire bob upload /p/x wait=60000');
        Wait::until(fn () => count($this->engine->waiters($this->ns)) === 1, 'bob in line');
        $start = hrtime(true);
        $this->assertOverLimit(LimitRefusal::PLACES, 1, 1, $this->upload('carol', '/p/y', 20000));
        $this->assertLessThan(10.0, (hrtime(true) - $start) / 1e9);
        $this->assertCount(1, $this->engine->waiters($this->ns));
        $this->assertTrue($this->engine->release($this->ns, $g->id, $g->token));
        $this->assertTrue($bob->read()['granted']);
    }

    public function testTheDefaultComesFromTheKeyForNamespacesWithoutTheirOwn(): void
    {
        static::$server->client()->rawCommand('SET', 'pl:limits', '2 - -');
        $engine = LockEngine::connect(static::$server->url, self::library());   // reads it on its first acquire
        $own = $this->ns . '-own';
        $engine->setLimits($own, new Limits());   // its own limits: none
        for ($i = 0; $i < 2; $i++) {
            $this->assertTrue($engine->acquire($this->ns, 'alice', 'upload', ["/d/$i"])->isGranted());
        }
        $this->assertOverLimit(LimitRefusal::LOCKS, 2, 2, $engine->acquire($this->ns, 'alice', 'upload', ['/d/2']));
        for ($i = 0; $i < 3; $i++) {
            $this->assertTrue($engine->acquire($own, 'alice', 'upload', ["/d/$i"])->isGranted());
        }
        $s = $engine->limits($this->ns);
        $this->assertEquals([new Limits(2), null, new Limits(2), 2], [$s->defaults, $s->own, $s->effective, $s->locks]);
    }

    public function testTheDefaultIsReadAtMostEvery5sAndSetDefaultLimitsAppliesAtOnce(): void
    {
        $admin = static::$server->client();
        $this->upload('alice', '/c/0');   // reads: no default
        $admin->rawCommand('SET', 'pl:limits', '1 - -');
        $gets = self::getCalls($admin);
        for ($i = 1; $i <= 5; $i++) {
            $this->assertTrue($this->upload('alice', "/c/$i")->isGranted());
        }
        $this->assertSame(0, self::getCalls($admin) - $gets, 'no GET within the refresh period');
        self::expireDefaults($this->engine);
        $this->assertOverLimit(LimitRefusal::LOCKS, 1, 6, $this->upload('alice', '/c/6'));
        $this->engine->setDefaultLimits(new Limits());
        $this->assertSame(0, $admin->rawCommand('EXISTS', 'pl:limits'));
        $this->assertTrue($this->upload('alice', '/c/6')->isGranted());
        $this->engine->setDefaultLimits(new Limits(locks: 7));
        $this->assertSame('7 - -', $admin->rawCommand('GET', 'pl:limits'));
    }

    private static function getCalls(\Redis $admin): int
    {
        return preg_match('/cmdstat_get:calls=(\d+)/', (string) $admin->rawCommand('INFO', 'commandstats'), $m) === 1 ? (int) $m[1] : 0;
    }

    public function testAUserWhoMayNotReadTheDefaultGetsNoneAndOneWarning(): void
    {
        $admin = static::$server->client();
        $admin->rawCommand('SET', 'pl:limits', '0 - -');
        $user = 'nolimits' . bin2hex(random_bytes(4));
        $admin->rawCommand('ACL', 'SETUSER', $user, 'on', '>pw', '~*', '&*', '+@all', '-get');
        try {
            $engine = LockEngine::connect('redis://' . $user . ':pw@' . substr(static::$server->url, strlen('redis://')), self::library());
            $warnings = [];
            $engine->setWarningHandler(function (string $m) use (&$warnings): void {
                $warnings[] = $m;
            });
            $this->assertTrue($engine->acquire($this->ns, 'alice', 'upload', ['/n/1'])->isGranted());
            self::expireDefaults($engine);
            $this->assertTrue($engine->acquire($this->ns, 'alice', 'upload', ['/n/2'])->isGranted());
            $this->assertCount(1, $warnings, implode("\n", $warnings));
            $this->assertStringContainsString('may not GET pl:limits', $warnings[0]);
        } finally {
            $admin->rawCommand('ACL', 'DELUSER', $user);
        }
    }

    public function testLimitsTextAndBadLimits(): void
    {
        foreach (['3 - -', '- 0 1000000000', '- - -'] as $text) {
            $this->assertSame($text, Limits::parse($text)?->text());
        }
        foreach (['', '3', '3 - - -', 'a - -', '1000000001 - -', '-1 - -', ' 3 - -'] as $text) {
            $this->assertNull(Limits::parse($text), $text);
        }
        foreach ([new Limits(Limits::MAX + 1), new Limits(places: -1)] as $bad) {
            try {
                $this->engine->setLimits($this->ns, $bad);
                $this->fail('bad limits were set');
            } catch (InvalidRequestException) {
            }
            try {
                $this->engine->setDefaultLimits($bad);
                $this->fail('bad default limits were set');
            } catch (InvalidRequestException) {
            }
        }
        $this->assertNull($this->engine->limits($this->ns)->own);
    }
}
