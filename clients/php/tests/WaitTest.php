<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Tests\Support\LineProcess;
use Pathlock\Tests\Support\RedisTestCase;
use Pathlock\Tests\Support\Wait;

/**
 * Waiting: a waiter in another process (the PHP driver) keeps a place in
 * line, is let in by a release, leaves the line at its deadline, and stops
 * on `cancel`. No assertion on durations: only on who holds what and who
 * is in line.
 */
final class WaitTest extends RedisTestCase
{
    /** Waits (bounded, as a failure) until the namespace has $n waiters. */
    private function awaitWaiters(int $n): array
    {
        return Wait::until(function () use ($n) {
            $w = $this->engine->waiters($this->ns);
            return count($w) === $n ? $w : null;
        }, "$n waiter(s)");
    }

    public function testAWaiterKeepsItsPlaceAndIsLetInByARelease(): void
    {
        $g = $this->engine->acquire($this->ns, 'alice', 'delete_folder', ['/p/A'], ttlMs: 60000)->grant;
        $bob = LineProcess::phpShell(static::$server->url, $this->ns);
        $bob->send('acquire bob upload /p/A/x wait=60000');
        [$w] = $this->awaitWaiters(1);
        $this->assertSame(['bob', 'upload', ['target' => '/p/A/x']], [$w->owner, $w->op, $w->targets]);
        $this->assertMatchesRegularExpression('/\Aw[0-9a-f]{24}\z/', $w->id);
        // the waiter listens for wake-ups: one connection SSUBSCRIBEd to the namespace's channel
        // (it subscribes after its first refused attempt, so it may be in line a moment before)
        Wait::until(fn () => preg_match('/ ssub=1 .* cmd=ssubscribe/', (string) static::$server->client()->rawCommand('CLIENT', 'LIST')) === 1,
            'a connection SSUBSCRIBEd to the channel');

        // A fair newcomer is refused by the older waiter once the lock is gone... but first,
        // while alice holds, blockers names alice's lock and bob's place.
        $rows = $this->engine->blockers($this->ns, 'delete_folder', ['/p/A/x'])->blockers;
        $this->assertSame([false, true], array_map(fn($b) => $b->queued, $rows));
        $this->assertSame([$g->id, $w->id], array_map(fn($b) => $b->id, $rows));

        $this->assertTrue($this->engine->release($this->ns, $g->id, $g->token));
        $answer = $bob->read();
        $this->assertTrue($answer['granted'], json_encode($answer));
        $this->assertSame([], $this->engine->waiters($this->ns), 'the grant took bob out of the line');
        $locks = $this->engine->list($this->ns);
        $this->assertCount(1, $locks);
        $this->assertSame($answer['id'], $locks[0]->id);
        $this->assertSame(0, $bob->close());
    }

    public function testTimeoutLeavesNobodyInLineAndNothingHeld(): void
    {
        $g = $this->engine->acquire($this->ns, 'alice', 'delete_folder', ['/p/A'], ttlMs: 60000)->grant;
        $r = $this->engine->acquire($this->ns, 'bob', 'upload', ['/p/A/x'], waitMs: 450);
        $this->assertFalse($r->isGranted());
        $this->assertSame($g->id, $r->conflict->id);
        $this->assertSame([], $this->engine->waiters($this->ns));
        $this->assertSame([$g->id], array_map(fn($l) => $l->id, $this->engine->list($this->ns)));
        // ... and a fair request is not held back by a ghost place
        $this->engine->release($this->ns, $g->id, $g->token);
        $this->assertTrue($this->engine->acquire($this->ns, 'carol', 'delete_folder', ['/p/A/x'])->isGranted());
    }

    public function testAFairNewcomerQueuesBehindAnOlderWaiter(): void
    {
        $g = $this->engine->acquire($this->ns, 'c1', 'create', ['/p/A'], ttlMs: 60000)->grant;
        $del = LineProcess::phpShell(static::$server->url, $this->ns);
        $del->send('acquire dan delete_folder /p/A wait=60000');
        [$w] = $this->awaitWaiters(1);
        // create is compatible with the held create, but not with the waiting delete
        $fair = $this->engine->acquire($this->ns, 'c2', 'create', ['/p/A']);
        $this->assertTrue($fair->conflict->queued);
        $this->assertSame($w->id, $fair->conflict->id);
        $unfair = $this->engine->acquire($this->ns, 'c3', 'create', ['/p/A'], fair: false);
        $this->assertTrue($unfair->isGranted());
        $this->engine->release($this->ns, $g->id, $g->token);
        $this->engine->release($this->ns, $unfair->grant->id, $unfair->grant->token);
        $this->assertTrue($del->read()['granted']);
        $del->close();
    }

    public function testCancelStopsTheWaitOfTheDriver(): void
    {
        $g = $this->engine->acquire($this->ns, 'alice', 'delete_folder', ['/p/A'], ttlMs: 60000)->grant;
        $bob = LineProcess::phpShell(static::$server->url, $this->ns);
        $this->assertContains('cancel', $bob->ask('hello')['features']);
        $this->assertSame(['cancelled' => false], $bob->ask('cancel'));
        $bob->send('acquire bob upload /p/A/x wait=60000');
        $this->awaitWaiters(1);
        $bob->send('held nope nope');
        $bob->send('cancel');
        $this->assertSame(['cancelled' => true, 'granted' => false], $bob->read());
        $this->assertSame(['held' => false], $bob->read(), 'a line sent during the wait is answered after it, in order');
        $this->assertSame(['cancelled' => true], $bob->read());
        $this->assertSame([], $this->engine->waiters($this->ns));
        $this->assertSame([$g->id], array_map(fn($l) => $l->id, $this->engine->list($this->ns)));
        $this->assertSame(0, $bob->close());
    }

    public function testEndOfInputDoesNotCancel(): void
    {
        $g = $this->engine->acquire($this->ns, 'alice', 'delete_folder', ['/p/A'], ttlMs: 60000)->grant;
        $bob = LineProcess::phpShell(static::$server->url, $this->ns);
        $bob->send('acquire bob upload /p/A/x wait=60000');
        $this->awaitWaiters(1);
        $bob->closeInput();
        usleep(300000);   // two re-checks with the input closed (not a timing assertion)
        $this->assertCount(1, $this->engine->waiters($this->ns), 'still waiting after end of input');
        $this->engine->release($this->ns, $g->id, $g->token);
        $answer = $bob->read();
        $this->assertTrue($answer['granted']);
        $this->assertSame(0, $bob->close());
    }
}
