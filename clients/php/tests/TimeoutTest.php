<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\TimeoutException;
use Pathlock\LockEngine;
use Pathlock\Tests\Support\RedisTestCase;

/**
 * A stalled server (CLIENT PAUSE ALL, 4 s) and an engine with a 0.3 s
 * command timeout: each call answers TimeoutException long before the
 * server would have answered (the assertion is "before the pause ended",
 * not a speed goal), and the engine works again once the server does.
 */
final class TimeoutTest extends RedisTestCase
{
    private const PAUSE_MS = 4000;

    private function stalled(callable $call): float
    {
        $engine = LockEngine::connect(static::$server->url, self::library(), commandTimeout: 0.3);
        $engine->list($this->ns);   // connected, library loaded
        $admin = static::$server->client();
        $admin->rawCommand('CLIENT', 'PAUSE', (string) self::PAUSE_MS, 'ALL');
        $start = hrtime(true);
        try {
            $call($engine);
            $this->fail('a call answered while the server was paused');
        } catch (TimeoutException $e) {
            $this->assertInstanceOf(BackendException::class, $e);
            $this->assertStringContainsString('no reply within 0.300 s', $e->getMessage());
        } finally {
            $elapsed = (hrtime(true) - $start) / 1e9;
            $admin->rawCommand('CLIENT', 'UNPAUSE');
        }
        $this->assertLessThan(self::PAUSE_MS / 1000, $elapsed, 'returned before the server answered');
        $this->assertSame([], $engine->list($this->ns), 'the next call reconnects and works');
        return $elapsed;
    }

    public function testAReadOnlyCallTimesOut(): void
    {
        $this->stalled(fn(LockEngine $e) => $e->isHeld($this->ns, 'a1', 'token'));
    }

    public function testAWaitingAcquireTimesOut(): void
    {
        $this->stalled(fn(LockEngine $e) => $e->acquire($this->ns, 'bob', 'upload', ['/p/A'], waitMs: 200));
    }
}
