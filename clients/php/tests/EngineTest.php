<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Endpoint;
use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;
use Pathlock\Grant;
use Pathlock\Library;
use Pathlock\LockEngine;
use Pathlock\Tests\Support\Ports;
use Pathlock\Tests\Support\RedisTestCase;

final class EngineTest extends RedisTestCase
{
    public function testGrantRefuseReleaseRenewHeld(): void
    {
        $a = $this->engine->acquire($this->ns, 'alice', 'move_folder', ['src' => '/p/A/C', 'dst' => '/p/B'], ttlMs: 10000);
        $g = $a->grant;
        $this->assertNotNull($g);
        $this->assertMatchesRegularExpression('/\A[0-9a-f]{24}\z/', $g->id);
        $this->assertMatchesRegularExpression('/\A[0-9a-f]{32}\z/', $g->token);
        $this->assertSame(1, $g->holds);
        $this->assertGreaterThan(0, $g->fence);

        $r = $this->engine->acquire($this->ns, 'carol', 'upload', ['target' => '/p/A/C/D']);
        $this->assertFalse($r->isGranted());
        $c = $r->conflict;
        $this->assertSame([$g->id, 'move_folder', 'src', '/p/A/C', 'alice', 'target', '/p/A/C/D', 'held_ancestor', false],
            [$c->id, $c->op, $c->role, $c->path, $c->owner, $c->requestedRole, $c->requestedPath, $c->relation, $c->queued]);
        // beside it: granted
        $this->assertTrue($this->engine->acquire($this->ns, 'dave', 'upload', ['/p/A/x'])->isGranted());

        $this->assertTrue($this->engine->isHeld($this->ns, $g->id, $g->token));
        $this->assertFalse($this->engine->isHeld($this->ns, $g->id, 'wrong'));
        $this->assertTrue($this->engine->renew($this->ns, $g->id, $g->token, 20000));
        $this->assertTrue($this->engine->renew($this->ns, $g->id, $g->token));
        $this->assertFalse($this->engine->renew($this->ns, $g->id, 'wrong'));
        $this->assertFalse($this->engine->release($this->ns, $g->id, 'wrong'));
        $this->assertTrue($this->engine->release($this->ns, $g->id, $g->token));
        $this->assertFalse($this->engine->release($this->ns, $g->id, $g->token));
        $this->assertFalse($this->engine->isHeld($this->ns, $g->id, $g->token));
        $this->assertTrue($this->engine->acquire($this->ns, 'carol', 'upload', ['/p/A/C/D'])->isGranted());
    }

    public function testAProofNoEngineMakesNamesNoLock(): void
    {
        // An id or token outside the engine's rules is answered as any unknown proof: false, as in every client.
        $g = $this->engine->acquire($this->ns, 'alice', 'upload', ['/p/proof'])->grant;
        foreach ([['', $g->token], ['id=1', $g->token], [str_repeat('a', 65), $g->token], ["\u{e9}", $g->token],
                  [$g->id, ''], [$g->id, str_repeat('t', 257)]] as [$id, $token]) {
            $this->assertFalse($this->engine->isHeld($this->ns, $id, $token));
            $this->assertFalse($this->engine->renew($this->ns, $id, $token));
            $this->assertFalse($this->engine->release($this->ns, $id, $token));
            if ($token !== '' && strlen($token) <= 256) {
                $this->assertFalse($this->engine->forceRelease($this->ns, $id));
            }
        }
        $this->assertTrue($this->engine->isHeld($this->ns, $g->id, $g->token), 'the lock itself is untouched');
        $this->expectException(InvalidRequestException::class);
        $this->engine->renew($this->ns, '', $g->token, 0);   // a bad ttl is still an error
    }

    public function testTheOwnerIsNoProofReentryIsByProof(): void
    {
        $t = ['src' => '/p/A', 'dst' => '/p/B'];
        $g = $this->engine->acquire($this->ns, 'alice', 'move_folder', $t)->grant;
        $again = $this->engine->acquire($this->ns, 'alice', 'move_folder', $t);
        $this->assertSame($g->id, $again->conflict->id, 'the same owner is refused like anyone');

        $re = $this->engine->acquire($this->ns, 'alice', 'move_folder', $t, reenter: $g);
        $this->assertSame([$g->id, $g->token, $g->fence, 2], [$re->grant->id, $re->grant->token, $re->grant->fence, $re->grant->holds]);
        $this->assertTrue($this->engine->release($this->ns, $g->id, $g->token));
        $this->assertTrue($this->engine->isHeld($this->ns, $g->id, $g->token), 'one hold left');
        $this->assertTrue($this->engine->release($this->ns, $g->id, $g->token));
        $this->assertFalse($this->engine->isHeld($this->ns, $g->id, $g->token));

        $gone = $this->engine->acquire($this->ns, 'alice', 'move_folder', $t, reenter: $g);
        $this->assertTrue($gone->notHolder);
        $this->assertNull($gone->conflict);

        $h = $this->engine->acquire($this->ns, 'alice', 'move_folder', $t)->grant;
        $this->expectException(InvalidRequestException::class);
        $this->engine->acquire($this->ns, 'alice', 'move_folder', ['src' => '/p/A', 'dst' => '/p/C'], reenter: $h);
    }

    public function testIdempotencyKey(): void
    {
        $first = $this->engine->acquire($this->ns, 'ann', 'upload', ['/p/A'], idempotencyKey: 'req-7f3a')->grant;
        $retry = $this->engine->acquire($this->ns, 'ann', 'upload', ['/p/A'], idempotencyKey: 'req-7f3a')->grant;
        $this->assertNotNull($retry);
        $this->assertSame([$first->id, $first->token, $first->fence, 1], [$retry->id, $retry->token, $retry->fence, $retry->holds]);
        $this->assertCount(1, $this->engine->list($this->ns));
        try {
            $this->engine->acquire($this->ns, 'ann', 'upload', ['/p/X'], idempotencyKey: 'req-7f3a');
            $this->fail('the same key with other paths was accepted');
        } catch (InvalidRequestException) {
            $this->addToAssertionCount(1);
        }
    }

    public function testListPagesAndForceRelease(): void
    {
        $ids = [];
        for ($i = 0; $i < 7; $i++) {
            $ids[] = $this->engine->acquire($this->ns, "u$i", 'upload', ["/p/$i"])->grant->id;
        }
        $this->engine->acquire($this->ns, 'x', 'upload', ['/q/1']);
        $seen = [];
        $after = '';
        do {
            $page = $this->engine->listPage($this->ns, '/p', 3, $after);
            $this->assertLessThanOrEqual(3, count($page->locks));
            foreach ($page->locks as $l) {
                $seen[] = $l->id;
                $this->assertSame('upload', $l->op);
                $this->assertSame(['target'], array_keys($l->targets));
            }
            $after = $page->next;
        } while ($after !== '');
        $this->assertSame($ids, $seen, 'every lock once, by fence');
        $this->assertCount(8, $this->engine->list($this->ns));

        $this->assertTrue($this->engine->forceRelease($this->ns, $ids[0]));
        $this->assertFalse($this->engine->forceRelease($this->ns, $ids[0]));
        $this->assertCount(6, $this->engine->list($this->ns, '/p'));
    }

    public function testBlockersAndWaiters(): void
    {
        $g = $this->engine->acquire($this->ns, 'alice', 'delete_folder', ['/p/A'])->grant;
        $this->engine->acquire($this->ns, 'bob', 'upload', ['/p/A/x/y']);   // refused, not waiting
        $page = $this->engine->blockers($this->ns, 'upload', ['/p/A/x']);
        $this->assertFalse($page->truncated);
        $this->assertCount(1, $page->blockers);
        $b = $page->blockers[0];
        $this->assertSame([false, $g->id, 'alice', 'delete_folder', 'target', '/p/A', 'held_ancestor', $g->fence, 1, 0],
            [$b->queued, $b->id, $b->owner, $b->op, $b->path === '/p/A' ? 'target' : $b->role, $b->path, $b->relation, $b->fence, $b->holds, $b->waitedMs]);
        $this->assertSame([], $this->engine->blockers($this->ns, 'upload', ['/q'])->blockers);
        $this->assertSame([], $this->engine->waiters($this->ns));
        $this->assertSame(1, count($this->engine->list($this->ns)), 'blockers takes nothing');
    }

    public function testBadInput(): void
    {
        $bad = [
            fn() => $this->engine->acquire('bad ns', 'a', 'upload', ['/p']),
            fn() => $this->engine->acquire($this->ns, '', 'upload', ['/p']),
            fn() => $this->engine->acquire($this->ns, 'a', 'no_such_op', ['/p']),
            fn() => $this->engine->acquire($this->ns, 'a', 'upload', ['/p', '/q']),
            fn() => $this->engine->acquire($this->ns, 'a', 'move_folder', ['src' => '/p', 'dest' => '/q']),
            fn() => $this->engine->acquire($this->ns, 'a', 'move_folder', ['src' => '/p', 'dst' => '/p/in']),
            fn() => $this->engine->acquire($this->ns, 'a', 'upload', ['/p/../q']),
            fn() => $this->engine->acquire($this->ns, 'a', 'upload', ['/p'], ttlMs: 0),
            fn() => $this->engine->acquire($this->ns, 'a', 'upload', ['/p'], waitMs: -1),
            fn() => $this->engine->acquire($this->ns, 'a', 'upload', ['/p'], idempotencyKey: 'has space'),
            fn() => $this->engine->acquire($this->ns, 'a', 'upload', ['/p'], reenter: new Grant('x', 't', 0, 0, 0), idempotencyKey: 'k'),
            fn() => $this->engine->renew($this->ns, 'id', 't', 604800001),
            fn() => $this->engine->listPage($this->ns, '/', 0),
            fn() => $this->engine->listPage($this->ns, '/', 10, 'abc'),
            fn() => $this->engine->waiters($this->ns, 'relative'),
            fn() => $this->engine->blockers($this->ns, 'upload', ['/p'], 1001),
        ];
        foreach ($bad as $i => $call) {
            try {
                $call();
                $this->fail("bad input $i was accepted");
            } catch (InvalidRequestException) {
                $this->addToAssertionCount(1);
            }
        }
        $this->assertSame([], $this->engine->list($this->ns), 'nothing was taken');
    }

    public function testBackendErrors(): void
    {
        // Nothing listens on a port we just had and closed.
        $port = Ports::free();
        try {
            LockEngine::connect("redis://127.0.0.1:$port", self::library(), 0.5, 0.5);
            $this->fail('connected to nothing');
        } catch (BackendException) {
            $this->addToAssertionCount(1);
        }
        $this->expectException(InvalidRequestException::class);
        Endpoint::fromUrl('http://127.0.0.1:1');
    }

    public function testTheLibraryIsLoadedWhereItIsMissing(): void
    {
        $redis = static::$server->client();
        $redis->rawCommand('FUNCTION', 'FLUSH');
        $this->assertTrue($this->engine->acquire($this->ns, 'ann', 'upload', ['/p'])->isGranted());
        $list = $redis->rawCommand('FUNCTION', 'LIST', 'LIBRARYNAME', self::library()->name);
        $this->assertCount(1, $list);
        // loading again is success ("already exists")
        $this->engine->loadLibrary();
        // a client that knows only the prefix cannot load it, and says so
        $redis->rawCommand('FUNCTION', 'FLUSH');
        $byPrefix = new LockEngine(static::$server->client(), Library::fromPrefix(self::library()->functionPrefix));
        try {
            $byPrefix->acquire($this->ns, 'ann', 'upload', ['/q']);
            $this->fail('called a missing library');
        } catch (BackendException $e) {
            $this->assertStringContainsString('function prefix only', $e->getMessage());
        }
        $this->engine->loadLibrary();
        $this->assertTrue($byPrefix->acquire($this->ns, 'ann', 'upload', ['/q'])->isGranted());
    }

    public function testTwoEnginesShareLocksNoGlobalState(): void
    {
        $other = LockEngine::connect(static::$server->url, self::library());
        $g = $this->engine->acquire($this->ns, 'ann', 'delete_folder', ['/p'])->grant;
        $this->assertSame($g->id, $other->acquire($this->ns, 'bob', 'upload', ['/p/x'])->conflict->id);
        $this->assertTrue($other->acquire($this->ns . '-b', 'bob', 'upload', ['/p/x'])->isGranted(), 'namespaces never interact');
    }
}
