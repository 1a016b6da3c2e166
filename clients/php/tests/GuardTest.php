<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Exception\ExceptionInterface;
use Pathlock\Exception\LockConflictedException;
use Pathlock\Exception\LockRefusedException;
use Pathlock\Exception\NotHolderException;
use Pathlock\Grant;
use Pathlock\LockEngineInterface;
use Pathlock\LockGuard;
use Pathlock\Tests\Support\RedisTestCase;

final class GuardTest extends RedisTestCase
{
    public function testReleasedInFinally(): void
    {
        $seen = null;
        try {
            $guard = $this->engine->lock($this->ns, 'alice', 'move_folder', ['src' => '/p/A', 'dst' => '/p/B']);
            try {
                $seen = $guard->grant->id;
                $this->assertTrue($guard->isHeld());
                throw new \DomainException('the handler failed');
            } finally {
                $this->assertTrue($guard->release());
            }
        } catch (\DomainException) {
        }
        $this->assertNotNull($seen);
        $this->assertTrue($guard->isReleased());
        $this->assertFalse($guard->release(), 'a second release does nothing');
        $this->assertSame([], $this->engine->list($this->ns));
    }

    public function testReleasedByItsDestructor(): void
    {
        $take = function (): string {
            $guard = $this->engine->lock($this->ns, 'alice', 'delete_folder', ['/p/A']);
            $this->assertCount(1, $this->engine->list($this->ns));
            return $guard->grant->id;   // the guard goes out of scope here, unreleased
        };
        $id = $take();
        $this->assertSame([], $this->engine->list($this->ns), "lock $id was given back by the destructor");

        $guard = $this->engine->lock($this->ns, 'alice', 'delete_folder', ['/p/A']);
        unset($guard);
        $this->assertSame([], $this->engine->list($this->ns));
    }

    public function testADestructorWhoseReleaseFailsDoesNotThrow(): void
    {
        $grant = $this->engine->acquire($this->ns, 'alice', 'delete_folder', ['/p/A'])->grant;
        // an engine that calls a library the server does not have, and cannot load
        $broken = new \Pathlock\LockEngine(static::$server->client(), \Pathlock\Library::fromPrefix('pl_v4_0000000000000000_'));
        $guard = new LockGuard($broken, $this->ns, $grant);
        unset($guard);   // the release throws inside the destructor: swallowed
        $this->assertCount(1, $this->engine->list($this->ns), 'still held until its lease ends');
    }

    public function testRefusalThrowsWithTheConflict(): void
    {
        $held = $this->engine->lock($this->ns, 'alice', 'delete_folder', ['/p/A']);
        try {
            $this->engine->lock($this->ns, 'bob', 'upload', ['/p/A/x'], waitMs: 250);
            $this->fail('granted');
        } catch (LockConflictedException $e) {
            $this->assertInstanceOf(LockRefusedException::class, $e);
            $this->assertInstanceOf(ExceptionInterface::class, $e);
            $this->assertSame($held->grant->id, $e->conflict->id);
            $this->assertSame('held_ancestor', $e->conflict->relation);
            $this->assertStringContainsString("locked by delete_folder 'alice' on /p/A", $e->getMessage());
        }
        $this->assertSame([], $this->engine->waiters($this->ns));
        $held->release();
    }

    public function testWithLockAndRenew(): void
    {
        $fence = $this->engine->withLock($this->ns, 'ann', 'upload', ['/p/A'], function ($grant) {
            $this->assertCount(1, $this->engine->list($this->ns));
            return $grant->fence;
        });
        $this->assertGreaterThan(0, $fence);
        $this->assertSame([], $this->engine->list($this->ns));

        $guard = $this->engine->lock($this->ns, 'ann', 'upload', ['/p/A'], ttlMs: 5000);
        $this->assertTrue($guard->renew(60000));
        $this->assertGreaterThan(5000, $this->engine->list($this->ns)[0]->expiresInMs);
        $this->engine->forceRelease($this->ns, $guard->grant->id);
        $this->assertFalse($guard->renew(), 'a lost lock is not renewed');
        $this->assertFalse($guard->isHeld());
        $this->assertInstanceOf(LockGuard::class, $guard);
    }

    public function testWithLockTakesReentryAndIdempotency(): void
    {
        $this->assertInstanceOf(LockEngineInterface::class, $this->engine);
        $outer = $this->engine->lock($this->ns, 'ann', 'upload', ['/p/A']);
        $holds = $this->engine->withLock($this->ns, 'ann', 'upload', ['/p/A'], fn(Grant $g) => $g->holds,
            reenter: $outer->grant);
        $this->assertSame(2, $holds, 'withLock re-entered the lock by its proof');
        $this->assertTrue($outer->isHeld(), 'withLock gave back its own hold only');
        $outer->release();

        $first = $this->engine->withLock($this->ns, 'ann', 'upload', ['/p/B'], fn(Grant $g) => $g->id,
            idempotencyKey: 'k-1');
        $this->assertNotSame('', $first);
        $this->assertSame([], $this->engine->list($this->ns));

        $gone = new Grant($outer->grant->id, $outer->grant->token, 0, 0, 0);
        $this->expectException(NotHolderException::class);
        $this->engine->withLock($this->ns, 'ann', 'upload', ['/p/A'], fn() => null, reenter: $gone);
    }
}
