<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Exception\InvalidRequestException;
use Pathlock\Grant;
use Pathlock\LockEngine;
use Pathlock\LockInfo;
use Pathlock\Tests\Support\LineProcess;
use Pathlock\Tests\Support\RedisTestCase;
use Pathlock\Tests\Support\Wait;
use Pathlock\Tests\Support\WaitProbe;

/**
 * Conversion (LockEngine::convert, the library's `convert`, protocol 4.5;
 * docs/design.md#conversion): a held lock gets a new operation and targets
 * in one call, or stays as it was. Waiting conversions with the PHP driver
 * or the C++ shell on the other side, or a WaitProbe in process. No
 * assertion on durations: only on who holds what and who is in line.
 */
final class ConvertTest extends RedisTestCase
{
    private const COPY = ['src' => '/p/A', 'dst' => '/q/A'];

    /** The listed lock $id, or null when it is gone. */
    private function lockOf(string $id): ?LockInfo
    {
        foreach ($this->engine->list($this->ns) as $l) {
            if ($l->id === $id) {
                return $l;
            }
        }
        return null;
    }

    /** What a conversion must not change: operation, targets, fence, holds. */
    private function shape(string $id): array
    {
        $l = $this->lockOf($id);
        return [$l?->op, $l?->targets, $l?->fence, $l?->holds];
    }

    /** Waits (bounded, as a failure) until one place is in line, converting lock $id. */
    private function awaitConversionInLine(string $id): \Pathlock\WaiterInfo
    {
        return Wait::until(function () use ($id) {
            $w = $this->engine->waiters($this->ns);
            return count($w) === 1 && $w[0]->converts === $id ? $w[0] : null;
        }, "a conversion of $id in line");
    }

    public function testCopyThenMoveOnOneLock(): void
    {
        $copy = $this->engine->acquire($this->ns, 'svc', 'copy_folder', self::COPY, ttlMs: 60000)->grant;
        $upload = $this->engine->acquire($this->ns, 'bob', 'upload', ['/p/A/x'])->grant;
        $this->assertNotNull($upload, 'an upload into the source runs beside the copy');

        $refused = $this->engine->convert($this->ns, $copy, 'move_folder', self::COPY);
        $c = $refused->conflict;
        $this->assertFalse($refused->isGranted());
        $this->assertFalse($refused->wouldDeadlock);
        $this->assertSame([$upload->id, 'upload', 'target', '/p/A/x', 'bob', 'src', '/p/A', 'held_descendant', false],
            [$c->id, $c->op, $c->role, $c->path, $c->owner, $c->requestedRole, $c->requestedPath, $c->relation, $c->queued]);
        $this->assertSame(['copy_folder', self::COPY, $copy->fence, 1], $this->shape($copy->id));

        $this->assertTrue($this->engine->release($this->ns, $upload->id, $upload->token));
        $move = $this->engine->convert($this->ns, $copy, 'move_folder', self::COPY, ttlMs: 20000)->grant;
        $this->assertNotNull($move);
        $this->assertSame([$copy->id, $copy->token, 1], [$move->id, $move->token, $move->holds]);
        $this->assertGreaterThan($upload->fence, $move->fence, 'a new fence above every fence issued before');
        $this->assertSame(['move_folder', self::COPY, $move->fence, 1], $this->shape($copy->id));
        $this->assertLessThanOrEqual(20000, $move->expiresInMs);

        $after = $this->engine->acquire($this->ns, 'bob', 'upload', ['/p/A/y']);
        $this->assertSame([$copy->id, 'move_folder'], [$after->conflict?->id, $after->conflict?->op], 'no upload gets in now');
        $this->assertTrue($this->engine->isHeld($this->ns, $copy->id, $copy->token), 'the proof stays valid');
        $this->assertTrue($this->engine->release($this->ns, $copy->id, $copy->token));
        $this->assertSame([], $this->engine->list($this->ns));
    }

    public function testARefusedConversionLeavesTheLockAsItWas(): void
    {
        $copy = $this->engine->acquire($this->ns, 'svc', 'copy_folder', self::COPY, ttlMs: 60000)->grant;
        $upload = $this->engine->acquire($this->ns, 'bob', 'upload', ['/p/A/x'])->grant;
        $r = $this->engine->convert($this->ns, $copy, 'delete_folder', ['/p'], ttlMs: 600000);
        $this->assertSame($upload->id, $r->conflict?->id);
        $this->assertSame(['copy_folder', self::COPY, $copy->fence, 1], $this->shape($copy->id));
        $this->assertLessThanOrEqual(60000, $this->lockOf($copy->id)->expiresInMs, 'the lease is not extended');
        $this->assertSame([], $this->engine->waiters($this->ns));
        $this->assertTrue($this->engine->acquire($this->ns, 'carol', 'create', ['/p/B'])->isGranted(),
            'nothing of delete_folder /p was left behind');
    }

    public function testAWrongProofIsNotHolderAndBadInputIsRefusedBeforeRedis(): void
    {
        $g = $this->engine->acquire($this->ns, 'alice', 'upload', ['/p/A/x'])->grant;
        $wrong = new Grant($g->id, $g->token . 'x', 0, 0, 0);
        $r = $this->engine->convert($this->ns, $wrong, 'upload', ['/p/B/x']);
        $this->assertTrue($r->notHolder);
        $this->assertNull($r->grant);
        $this->assertSame(['upload', ['target' => '/p/A/x'], $g->fence, 1], $this->shape($g->id));

        foreach ([
            fn() => $this->engine->convert($this->ns, new Grant('bad id', $g->token, 0, 0, 0), 'upload', ['/p/B/x']),
            fn() => $this->engine->convert($this->ns, new Grant($g->id, '', 0, 0, 0), 'upload', ['/p/B/x']),
            fn() => $this->engine->convert($this->ns, $g, 'no_such_op', ['/p/B/x']),
            fn() => $this->engine->convert($this->ns, $g, 'move_folder', ['/p/B']),
            fn() => $this->engine->convert($this->ns, $g, 'upload', ['relative']),
            fn() => $this->engine->convert($this->ns, $g, 'upload', ['/p/B/x'], ttlMs: 0),
            fn() => $this->engine->convert($this->ns, $g, 'upload', ['/p/B/x'], waitMs: -1),
            fn() => $this->engine->convert($this->ns, $g, 'upload', ['/p/B/x'], idempotencyKey: 'a key'),
            fn() => $this->engine->convert('', $g, 'upload', ['/p/B/x']),
        ] as $i => $bad) {
            try {
                $bad();
                $this->fail("bad input #$i was accepted");
            } catch (InvalidRequestException) {
            }
        }
        // a lock with two holds: the library's `invalid`
        $this->engine->acquire($this->ns, 'alice', 'upload', ['/p/A/x'], reenter: $g);
        $this->expectException(InvalidRequestException::class);
        try {
            $this->engine->convert($this->ns, $g, 'upload', ['/p/B/x']);
        } finally {
            $this->assertSame(['upload', ['target' => '/p/A/x'], $g->fence, 2], $this->shape($g->id));
        }
    }

    public function testAKeyedConversionSentAgainGetsTheLockAsItMadeIt(): void
    {
        $g = $this->engine->acquire($this->ns, 'alice', 'upload', ['/p/A/x'])->grant;
        $first = $this->engine->convert($this->ns, $g, 'create', ['/p/A'], idempotencyKey: 'conv-1')->grant;
        $again = $this->engine->convert($this->ns, $g, 'create', ['/p/A'], idempotencyKey: 'conv-1')->grant;
        $this->assertGreaterThan($g->fence, $first->fence);
        $this->assertSame([$g->id, $first->fence], [$again->id, $again->fence], 'the retry converted nothing twice');
        $this->assertSame(['create', ['target' => '/p/A'], $first->fence, 1], $this->shape($g->id));
    }

    public function testAWaitingConversionIsListedAndGrantedWhenTheBlockerIsReleased(): void
    {
        $blocker = $this->engine->acquire($this->ns, 'alice', 'delete_folder', ['/p/A'], ttlMs: 60000)->grant;
        $bob = LineProcess::phpShell(static::$server->url, $this->ns);
        $this->assertContains('convert', $bob->ask('hello')['features']);
        $mine = $bob->ask('acquire bob upload /p/B/x ttl=60000');
        $bob->send("convert {$mine['id']} {$mine['token']} upload /p/A/x wait=60000");
        $w = $this->awaitConversionInLine($mine['id']);
        $this->assertSame(['bob', 'upload', ['target' => '/p/A/x']], [$w->owner, $w->op, $w->targets]);
        $this->assertSame(['upload', ['target' => '/p/B/x'], $mine['fence'], 1], $this->shape($mine['id']), 'unchanged while it waits');
        $carol = LineProcess::phpShell(static::$server->url, $this->ns);   // bob's driver answers after the conversion
        $this->assertSame($mine['id'], $carol->ask('waiters')['waiters'][0]['converts'] ?? null);
        $this->assertSame(0, $carol->close());

        $this->assertTrue($this->engine->release($this->ns, $blocker->id, $blocker->token));
        $answer = $bob->read();
        $this->assertSame([true, $mine['id'], $mine['token'], 1], [$answer['granted'], $answer['id'], $answer['token'], $answer['holds']]);
        $this->assertGreaterThan($blocker->fence, $answer['fence']);
        $this->assertSame([], $this->engine->waiters($this->ns), 'the grant took the conversion out of the line');
        $this->assertSame(['upload', ['target' => '/p/A/x'], $answer['fence'], 1], $this->shape($mine['id']));
        $this->assertSame(0, $bob->close());
    }

    /** The ids of a blockers page, sorted (the page is not truncated). */
    private function blockerIds(\Pathlock\BlockersPage $page): array
    {
        $this->assertFalse($page->truncated);
        $ids = array_map(fn($b) => $b->id, $page->blockers);
        sort($ids);
        return $ids;
    }

    public function testTheDryRunOfAConversionLeavesOutTheLockAndThePlacesItRefuses(): void
    {
        $copy = $this->engine->acquire($this->ns, 'svc', 'copy_folder', self::COPY, ttlMs: 60000)->grant;
        $upload = $this->engine->acquire($this->ns, 'u', 'upload', ['/p/A/x'], ttlMs: 60000)->grant;
        $other = $this->engine->acquire($this->ns, 'o', 'upload', ['/r/z'], ttlMs: 60000)->grant;
        $dan = LineProcess::phpShell(static::$server->url, $this->ns);
        $dan->send('acquire dan delete_folder /p/A wait=60000');
        [$w] = Wait::until(fn() => count($ws = $this->engine->waiters($this->ns)) === 1 ? $ws : null, "dan's delete in line");
        $ids = fn(?string $converts = null, bool $fair = true): array => $this->blockerIds(
            $this->engine->blockers($this->ns, 'move_folder', self::COPY, converts: $converts, fair: $fair));
        $all = [$copy->id, $upload->id, $w->id];
        sort($all);
        $held = [$copy->id, $upload->id];
        sort($held);
        $this->assertSame($all, $ids());
        $this->assertSame([$upload->id], $ids($copy->id), 'the copy itself and the delete waiting for it are left out');
        $this->assertSame([$upload->id], $ids($copy->id, false));
        $this->assertSame($all, $ids($other->id), 'a lock elsewhere: the waiting delete refuses its conversion');
        $this->assertSame($held, $ids($other->id, false), 'unfair: held locks only');
        $this->assertSame($all, $ids('no-such-lock'), 'an id no lock has: the plain answer');
        foreach ([['', true], ['not_an_id', true], [str_repeat('a', 65), true], [null, false]] as [$converts, $fair]) {
            try {
                $ids($converts, $fair);
                $this->fail('accepted converts ' . var_export($converts, true) . ', fair ' . var_export($fair, true));
            } catch (InvalidRequestException) {
            }
        }
        $this->assertTrue($this->engine->release($this->ns, $copy->id, $copy->token));
        $this->assertTrue($this->engine->release($this->ns, $upload->id, $upload->token));
        $this->assertTrue($dan->read()['granted']);
        $this->assertSame(0, $dan->close());
    }

    public function testTheLaterOfTwoConvertersWaitingForEachOtherIsWouldDeadlock(): void
    {
        // create and create hold together on /p/A; each refuses delete_folder there
        $cpp = LineProcess::cppShell(static::$server->url, $this->ns);
        $a = $cpp->ask('acquire a create /p/A ttl=60000');
        $b = $this->engine->acquire($this->ns, 'b', 'create', ['/p/A'], ttlMs: 60000)->grant;
        $cpp->send("convert {$a['id']} {$a['token']} delete_folder /p/A wait=60000");
        $this->awaitConversionInLine($a['id']);

        $r = $this->engine->convert($this->ns, $b, 'delete_folder', ['/p/A'], waitMs: 60000);
        $this->assertTrue($r->wouldDeadlock);
        $this->assertSame([$a['id'], 'create', 'a', false], [$r->conflict?->id, $r->conflict?->op, $r->conflict?->owner, $r->conflict?->queued]);
        $this->assertSame(['create', ['target' => '/p/A'], $b->fence, 1], $this->shape($b->id));
        $this->assertCount(1, $this->engine->waiters($this->ns), "only a's conversion is in line");

        $this->assertTrue($this->engine->release($this->ns, $b->id, $b->token));
        $answer = $cpp->read();
        $this->assertSame([true, $a['id']], [$answer['granted'], $answer['id']]);
        $this->assertSame('delete_folder', $this->lockOf($a['id'])?->op);
        $this->assertSame(0, $cpp->close());
    }

    public function testATimeoutOrACancellationLeavesTheLockAsItWasAndTheLineEmpty(): void
    {
        $blocker = $this->engine->acquire($this->ns, 'alice', 'delete_folder', ['/p/A'], ttlMs: 60000)->grant;
        $g = $this->engine->acquire($this->ns, 'bob', 'upload', ['/p/B/x'], ttlMs: 60000)->grant;
        $before = $this->shape($g->id);

        $timedOut = $this->engine->convert($this->ns, $g, 'upload', ['/p/A/x'], waitMs: 450);
        $this->assertSame($blocker->id, $timedOut->conflict?->id);
        $this->assertSame([], $this->engine->waiters($this->ns));
        $this->assertSame($before, $this->shape($g->id));

        $watcher = LockEngine::connect(static::$server->url, self::library());
        $probe = new WaitProbe([fn() => count($watcher->waiters($this->ns)) === 1 ?: null], cancels: true);
        $cancelled = $this->engine->convert($this->ns, $g, 'upload', ['/p/A/x'], waitMs: 20000, cancellation: $probe);
        $this->assertTrue($cancelled->cancelled);
        $this->assertSame([], $this->engine->waiters($this->ns), 'the cancelled conversion left the line');
        $this->assertSame($before, $this->shape($g->id));
        $this->assertSame($blocker->id, $this->engine->acquire($this->ns, 'carol', 'upload', ['/p/A/x'])->conflict?->id);
    }

    public function testACancellationAfterTheGrantKeepsTheConversion(): void
    {
        $blocker = $this->engine->acquire($this->ns, 'alice', 'delete_folder', ['/p/A'], ttlMs: 60000)->grant;
        $g = $this->engine->acquire($this->ns, 'bob', 'upload', ['/p/B/x'], ttlMs: 60000)->grant;
        $watcher = LockEngine::connect(static::$server->url, self::library());
        $probe = new WaitProbe([
            fn() => count($watcher->waiters($this->ns)) === 1 ? $watcher->release($this->ns, $blocker->id, $blocker->token) : null,
            // cancelled once the conversion is made: an acquire would give such a grant back
            fn() => $watcher->list($this->ns, '/p/A') !== [] ?: null,
        ], cancels: true);
        $r = $this->engine->convert($this->ns, $g, 'upload', ['/p/A/x'], waitMs: 20000, cancellation: $probe);
        $this->assertTrue($probe->isCancelled(), 'the wait is cancelled now');
        $this->assertSame([$g->id, false], [$r->grant?->id, $r->cancelled], 'the conversion stands and is reported');
        $this->assertSame(['upload', ['target' => '/p/A/x'], $r->grant->fence, 1], $this->shape($g->id));
        $this->assertSame([], $this->engine->waiters($this->ns));
    }

    public function testALockConvertedByPhpIsSeenConvertedByTheCppEngine(): void
    {
        $cpp = LineProcess::cppShell(static::$server->url, $this->ns);
        $copy = $this->engine->acquire($this->ns, 'svc', 'copy_folder', self::COPY, ttlMs: 60000)->grant;
        $move = $this->engine->convert($this->ns, $copy, 'move_folder', self::COPY, ttlMs: 60000)->grant;
        [$listed] = $cpp->ask('locks')['locks'];
        $this->assertSame([$copy->id, 'move_folder', ['dst' => '/q/A', 'src' => '/p/A'], $move->fence, 1],
            [$listed['id'], $listed['op'], $listed['targets'], $listed['fence'], $listed['holds']]);
        $this->assertSame(['held' => true], $cpp->ask("held {$copy->id} {$copy->token}"));
        $refused = $cpp->ask('acquire carol upload /p/A/x');
        $this->assertSame([false, $copy->id, 'move_folder'], [$refused['granted'], $refused['conflict']['id'], $refused['conflict']['op']]);

        // and back: the C++ engine converts the PHP lock; PHP sees it, and its proof still holds
        $back = $cpp->ask("convert {$copy->id} {$copy->token} copy_folder /p/A /q/A");
        $this->assertSame([true, $copy->id], [$back['granted'], $back['id']]);
        $this->assertGreaterThan($move->fence, $back['fence']);
        $this->assertSame(['copy_folder', self::COPY, $back['fence'], 1], $this->shape($copy->id));
        $this->assertTrue($this->engine->release($this->ns, $copy->id, $copy->token));
        $this->assertSame(0, $cpp->close());
    }
}
