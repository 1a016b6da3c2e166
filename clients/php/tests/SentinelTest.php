<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;
use Pathlock\Library;
use Pathlock\LockEngine;
use Pathlock\Tests\Support\LineProcess;
use Pathlock\Tests\Support\RedisServer;
use Pathlock\Tests\Support\SentinelServer;
use Pathlock\Tests\Support\Wait;
use Pathlock\Tests\Support\WaitProbe;
use PHPUnit\Framework\TestCase;

/**
 * `redis-sentinel://…#MASTER` (docs/php.md "Deployments"): one master, one
 * real sentinel watching it; the engine finds the master through the
 * sentinel and works there, its wake-ups too. A failover (a master, its
 * replica and a sentinel of their own, SENTINEL FAILOVER): the engine made
 * before it finds the new master by itself, its lock still held there.
 *
 * Every test has 60 s (phpunit.xml.dist: enforceTimeLimit, pcntl and php-invoker).
 */
final class SentinelTest extends TestCase
{
    private static ?RedisServer $master = null;
    private static ?SentinelServer $sentinel = null;

    public static function setUpBeforeClass(): void
    {
        self::$sentinel = new SentinelServer();
        self::$master = self::$sentinel->master;
    }

    public static function tearDownAfterClass(): void
    {
        self::$sentinel?->stop();
        self::$sentinel = self::$master = null;
    }

    private function url(string $master): string
    {
        // a sentinel that is not there first: the next one is asked
        return 'redis-sentinel://127.0.0.1:1,127.0.0.1:' . self::$sentinel->port . '#' . $master;
    }

    private function engine(): LockEngine
    {
        return LockEngine::connect($this->url(self::$sentinel->masterName), Library::fromFile((string) getenv('PATHLOCK_LIBRARY')));
    }

    public function testTheMasterIsFoundAndAWaiterIsWokenThere(): void
    {
        $ns = 'php-sen-' . bin2hex(random_bytes(4));
        $alice = $this->engine();
        $held = $alice->lock($ns, 'alice', 'delete_folder', ['/p/A']);
        $this->assertSame(1, self::$master->client()->exists("pl:{{$ns}}:meta"), 'the lock is on the master');
        $this->assertNull($this->engine()->acquire($ns, 'bob', 'upload', ['/p/A/x'])->grant);
        $seen = '';
        $probe = new WaitProbe([function () use ($held, &$seen) {
            $seen = implode(' ', (array) self::$master->client()->rawCommand('PUBSUB', 'SHARDCHANNELS'));
            return $seen === '' ? null : $held->release();
        }]);
        $r = $this->engine()->acquire($ns, 'bob', 'upload', ['/p/A/x'], waitMs: 20000, cancellation: $probe);
        $this->assertNotNull($r->grant);
        $this->assertSame("pl:{{$ns}}:wake", $seen, 'bob subscribed on the master');
        $this->assertTrue($alice->release($ns, $r->grant->id, $r->grant->token));
    }

    public function testThePhpShellWorksThroughTheSentinel(): void
    {
        $ns = 'php-sen-' . bin2hex(random_bytes(4));
        $shell = LineProcess::phpShell($this->url(self::$sentinel->masterName), $ns);
        $this->assertContains('deadline', $shell->ask('hello')['features'] ?? null);
        $g = $shell->ask('acquire bob upload /p/A/x deadline=5000');
        $this->assertTrue($g['granted'], json_encode($g));
        $this->assertSame(1, self::$master->client()->exists("pl:{{$ns}}:meta"), 'the lock is on the master');
        $this->assertSame(['released' => true], $shell->ask("release {$g['id']} {$g['token']}"));
        $this->assertSame(0, $shell->close());
    }

    /**
     * $test($engine, $ns, $old, $replica, $sentinel) on a master and its
     * replica watched by a sentinel of their own (failing the master over
     * after $downAfterMs without an answer), with an engine made through it.
     *
     * @param callable(LockEngine, string, RedisServer, RedisServer, SentinelServer): void $test
     */
    private function withMasterAndReplica(string $name, int $downAfterMs, callable $test): void
    {
        // The launcher's: the replica synced and known to the sentinel; the first sync at once.
        $sentinel = new SentinelServer($name, $downAfterMs, 1, ['--repl-diskless-sync-delay', '0']);
        $old = $sentinel->master;
        $replica = $sentinel->replica;
        try {
            $engine = LockEngine::connect("redis-sentinel://127.0.0.1:{$sentinel->port}#$name",
                Library::fromFile((string) getenv('PATHLOCK_LIBRARY')));
            $test($engine, 'php-fo-' . bin2hex(random_bytes(4)), $old, $replica, $sentinel);
        } finally {
            $sentinel->stop();
        }
    }

    public function testAfterAFailoverTheEngineFindsTheNewMaster(): void
    {
        $this->withMasterAndReplica('pathlockfailover', 30000, function (LockEngine $engine, string $ns, RedisServer $old, RedisServer $replica, SentinelServer $sentinel): void {
            $held = $engine->lock($ns, 'alice', 'delete_folder', ['/p/A']);
            // the call's effects come as one
            Wait::until(fn () => $replica->client()->exists("pl:{{$ns}}:meta") === 1, 'the replica has the lock');
            $sentinel->failOverTo($replica->port);
            // the sentinel makes the old master a replica: it sees the old
            // master's role in INFO, asked every 10 s. Reconfiguring it, the
            // sentinel kills its normal clients (CLIENT KILL TYPE normal), so a
            // poll cut off then asks again.
            Wait::until(function () use ($old) {
                try {
                    return $old->client()->role()[0] === 'slave';
                } catch (\RedisException) {
                    return null;
                }
            }, 'the old master made a replica', 25.0);

            // The first call goes to the old master, now a replica: READONLY, then the new master.
            $this->assertNull($engine->acquire($ns, 'bob', 'upload', ['/p/A/x'])->grant, 'the lock is held on the new master');
            $seen = '';
            $probe = new WaitProbe([function () use ($held, $replica, &$seen) {
                $seen = implode(' ', (array) $replica->client()->rawCommand('PUBSUB', 'SHARDCHANNELS'));
                return $seen === '' ? null : $held->release();
            }]);
            $r = $engine->acquire($ns, 'bob', 'upload', ['/p/A/x'], waitMs: 20000, cancellation: $probe);
            $this->assertNotNull($r->grant);
            $this->assertSame("pl:{{$ns}}:wake", $seen, 'bob subscribed on the new master');
            $this->assertTrue($engine->release($ns, $r->grant->id, $r->grant->token));
        });
    }

    public function testAfterItsMasterDiedTheEngineAsksTheSentinelsAgain(): void
    {
        $this->withMasterAndReplica('pathlockdead', 1000, function (LockEngine $engine, string $ns, RedisServer $old, RedisServer $replica, SentinelServer $sentinel): void {
            $this->assertNotNull($engine->acquire($ns, 'alice', 'upload', ['/p/A/1'])->grant);
            $old->stop();
            $sentinel->failOverTo($replica->port, ask: false);
            try {
                $engine->acquire($ns, 'alice', 'upload', ['/p/A/2']);
                $this->fail('a call to the dead master succeeded');
            } catch (BackendException $e) {
                $this->assertStringContainsString('redis: acquire:', $e->getMessage());
            }
            $r = $engine->acquire($ns, 'alice', 'upload', ['/p/A/3']);   // the sentinels are asked first
            $this->assertNotNull($r->grant);
            $this->assertSame(1, $replica->client()->exists("pl:{{$ns}}:meta"), 'granted on the new master');
        });
    }

    public function testAnUnknownMasterNameIsABackendError(): void
    {
        $this->expectException(BackendException::class);
        $this->expectExceptionMessage("does not know a master named 'nosuch'");
        LockEngine::connect($this->url('nosuch'), Library::fromFile((string) getenv('PATHLOCK_LIBRARY')));
    }

    public function testAUrlWithoutAMasterNameIsRefused(): void
    {
        $this->expectException(InvalidRequestException::class);
        LockEngine::connect('redis-sentinel://127.0.0.1:' . self::$sentinel->port, Library::fromFile((string) getenv('PATHLOCK_LIBRARY')));
    }
}
