<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\ClusterConnection;
use Pathlock\Library;
use Pathlock\LockEngine;
use Pathlock\Tests\Support\LineProcess;
use Pathlock\Tests\Support\RedisCluster;
use Pathlock\Tests\Support\Wait;
use Pathlock\Tests\Support\WaitProbe;
use PHPUnit\Framework\TestCase;

/**
 * The engine on a real Redis Cluster of three masters (docs/php.md
 * "Deployments"): calls routed by the namespace's slot, the library loaded
 * on every master, wake-ups subscribed on the master that serves the
 * namespace, and a slot moved to another master while a lock is held and
 * while someone waits for it.
 *
 * Every test has 60 s (phpunit.xml.dist: enforceTimeLimit, pcntl and php-invoker).
 */
final class ClusterTest extends TestCase
{
    private static ?RedisCluster $cluster = null;

    public static function setUpBeforeClass(): void
    {
        self::$cluster = new RedisCluster(3);
    }

    public static function tearDownAfterClass(): void
    {
        self::$cluster?->stop();
        self::$cluster = null;
    }

    private function engine(): LockEngine
    {
        return LockEngine::connect(self::$cluster->url(), Library::fromFile((string) getenv('PATHLOCK_LIBRARY')));
    }

    /** A fresh namespace whose slot the master on $port serves. */
    private function namespaceOn(int $port): string
    {
        for ($i = 0; $i < 1000; $i++) {
            $ns = 'php-cl-' . bin2hex(random_bytes(4));
            if (self::$cluster->masterOf("pl:{{$ns}}:meta") === $port) {
                return $ns;
            }
        }
        throw new \RuntimeException("no namespace found on the master at $port");
    }

    public function testTheSlotIsComputedAsRedisDoes(): void
    {
        $node = self::$cluster->node(self::$cluster->ports[0]);
        foreach (['pl:{a}:wake', 'pl:{php-cl-1}:meta', 'plain', '{}x', 'a{}{b}', 'x{y'] as $key) {
            $this->assertSame((int) $node->rawCommand('CLUSTER', 'KEYSLOT', $key), ClusterConnection::slot($key), $key);
        }
    }

    public function testNamespacesOnEachMasterAreGrantedAndRefusedByTheMatrix(): void
    {
        $alice = $this->engine();
        $bob = $this->engine();
        foreach (self::$cluster->ports as $port) {
            $ns = $this->namespaceOn($port);
            $held = $alice->lock($ns, 'alice', 'delete_folder', ['/p/A']);
            $refused = $bob->acquire($ns, 'bob', 'upload', ['/p/A/x']);
            $this->assertNull($refused->grant, "upload inside a folder being deleted is refused ($port)");
            $this->assertSame($held->grant->id, $refused->conflict->id);
            $other = $bob->acquire($ns, 'bob', 'upload', ['/q/x']);
            $this->assertNotNull($other->grant, "an upload elsewhere is granted ($port)");
            $this->assertCount(2, $bob->list($ns));
            $this->assertSame(1, self::$cluster->node($port)->exists("pl:{{$ns}}:meta"), 'the keys live on the master of the slot');
            $this->assertTrue($held->release());
            $this->assertTrue($bob->release($ns, $other->grant->id, $other->grant->token));
            $this->assertSame([], $alice->list($ns));
        }
    }

    public function testAFreshClusterGetsTheLibraryOnEveryMaster(): void
    {
        $library = Library::fromFile((string) getenv('PATHLOCK_LIBRARY'));
        foreach (self::$cluster->ports as $port) {
            self::$cluster->node($port)->rawCommand('FUNCTION', 'FLUSH');
        }
        $engine = $this->engine();
        $ns = $this->namespaceOn(self::$cluster->ports[2]);
        $this->assertNotNull($engine->acquire($ns, 'alice', 'upload', ['/a'])->grant);
        foreach (self::$cluster->ports as $port) {
            $this->assertTrue($this->hasLibrary($port, $library->name), "loaded on the master at $port");
        }
        // One master loses it (a restart without persistence): the next call there loads it again.
        self::$cluster->node(self::$cluster->ports[2])->rawCommand('FUNCTION', 'FLUSH');
        $this->assertNotNull($engine->acquire($ns, 'alice', 'upload', ['/b'])->grant);
        $this->assertTrue($this->hasLibrary(self::$cluster->ports[2], $library->name));
    }

    public function testAWaiterIsWokenThroughASubscriptionOnTheNamespacesMaster(): void
    {
        [$owner, $other] = [self::$cluster->ports[1], self::$cluster->ports[0]];
        $ns = $this->namespaceOn($owner);
        $alice = $this->engine();
        $held = $alice->lock($ns, 'alice', 'delete_folder', ['/p/A']);
        $seen = [];
        $probe = new WaitProbe([
            function () use ($owner, $other, $held, &$seen) {
                if ($this->subscribers($owner) === []) {
                    return null;
                }
                $seen = [$this->channels($owner), $this->channels($other)];
                return $held->release();
            },
        ]);
        $r = $this->engine()->acquire($ns, 'bob', 'upload', ['/p/A/x'], waitMs: 20000, cancellation: $probe);
        $this->assertNotNull($r->grant, 'bob was granted after the release');
        $this->assertSame(1, $probe->step, 'the release came while bob was subscribed on the master of his namespace');
        $this->assertSame(["pl:{{$ns}}:wake", ''], $seen, 'subscribed on the master of the namespace, on no other');
        $this->assertTrue($alice->release($ns, $r->grant->id, $r->grant->token));
    }

    public function testASlotMovedWhileALockIsHeldStillHoldsItAndReleases(): void
    {
        [$from, $to] = [self::$cluster->ports[0], self::$cluster->ports[2]];
        $ns = $this->namespaceOn($from);
        $alice = $this->engine();
        $held = $alice->lock($ns, 'alice', 'delete_folder', ['/p/A']);
        self::$cluster->moveSlot(ClusterConnection::slot("pl:{{$ns}}:meta"), $to);
        $this->assertSame($to, self::$cluster->masterOf("pl:{{$ns}}:meta"));
        $this->assertSame(1, self::$cluster->node($to)->exists("pl:{{$ns}}:meta"), 'the keys moved with the slot');
        $this->assertTrue($held->isHeld(), 'still held after the move');
        $this->assertNull($this->engine()->acquire($ns, 'bob', 'upload', ['/p/A/x'])->grant, 'still refuses');
        $this->assertSame([$held->grant->id], array_map(fn($l) => $l->id, $alice->list($ns)));
        $this->assertTrue($held->release());
        $this->assertNotNull($this->engine()->acquire($ns, 'bob', 'upload', ['/p/A/x'])->grant);
    }

    /**
     * phpredis 5.3's rawCommand does not follow MOVED; the engine does, and
     * a second slot moved to the same master looks like the first
     * redirection (docs/php.md "What phpredis 5.3.7 cannot do"): reads and
     * keyed acquires still work, an unkeyed acquire is a lost reply once.
     */
    public function testTwoSlotsMovedToTheSameMaster(): void
    {
        [$from, $to] = [self::$cluster->ports[1], self::$cluster->ports[0]];
        [$first, $second] = [$this->namespaceOn($from), $this->namespaceOn($from)];
        $engine = $this->engine();
        $held = [$engine->lock($first, 'alice', 'upload', ['/a']), $engine->lock($second, 'alice', 'upload', ['/a'])];
        $move = fn(string $ns, int $port) => self::$cluster->moveSlot(ClusterConnection::slot("pl:{{$ns}}:meta"), $port);
        $move($first, $to);
        $this->assertNotNull($engine->acquire($first, 'bob', 'upload', ['/b'])->grant, 'a write after a new redirection is sent on');
        $move($second, $to);
        $this->assertTrue($held[1]->isHeld(), 'a read after the same redirection is sent on');
        $move($first, $from);
        $this->assertNotNull($engine->acquire($first, 'bob', 'upload', ['/c'])->grant);
        $move($second, $from);
        $this->assertNotNull($engine->acquire($second, 'bob', 'upload', ['/c'], idempotencyKey: 'k1')->grant, 'a keyed acquire is sent again');
        $move($first, $to);
        $this->assertCount(3, $engine->list($first));
        $move($second, $to);
        try {
            $engine->acquire($second, 'bob', 'upload', ['/d']);
            $this->fail('an unkeyed acquire after the same redirection is a lost reply');
        } catch (\Pathlock\Exception\BackendException $e) {
            $this->assertStringContainsString('may have run', $e->getMessage());
        }
        $this->assertSame(['/a', '/c'], array_map(fn($l) => array_values($l->targets)[0], $engine->list($second)),
            '/d did not run, and the next call finds the master');
        $this->assertTrue($held[0]->release());
        $this->assertTrue($held[1]->release());
    }

    public function testAWaiterFollowsItsSlotToTheNewMaster(): void
    {
        [$from, $to] = [self::$cluster->ports[1], self::$cluster->ports[2]];
        $ns = $this->namespaceOn($from);
        $alice = $this->engine();
        $held = $alice->lock($ns, 'alice', 'delete_folder', ['/p/A']);
        $probe = new WaitProbe([
            // bob subscribed on the old master: move the slot away (Redis ends that subscription)
            fn() => $this->subscribers($from) !== [] ? self::$cluster->moveSlot(ClusterConnection::slot("pl:{{$ns}}:wake"), $to) : null,
            // bob subscribed again, on the new master: release there
            fn() => $this->subscribers($to) !== [] ? $held->release() : null,
        ]);
        $r = $this->engine()->acquire($ns, 'bob', 'upload', ['/p/A/x'], waitMs: 20000, cancellation: $probe);
        $this->assertNotNull($r->grant, 'bob was granted after the release');
        $this->assertSame(2, $probe->step, 'bob subscribed on the old master, then on the new one, and the release came then');
        $this->assertSame('', $this->channels($from), 'the old master ended the subscription');
        $this->assertTrue($alice->release($ns, $r->grant->id, $r->grant->token));
    }

    /**
     * A stalled master (CLIENT PAUSE ALL, 4 s) and an engine with a 0.3 s
     * command timeout: the call is a TimeoutException before the pause ends
     * (not a speed goal), and the engine works again once the master does.
     */
    public function testACallToAStalledMasterTimesOut(): void
    {
        $port = self::$cluster->ports[2];
        $ns = $this->namespaceOn($port);
        $engine = LockEngine::connect(self::$cluster->url(), Library::fromFile((string) getenv('PATHLOCK_LIBRARY')), commandTimeout: 0.3);
        $g = $engine->lock($ns, 'alice', 'upload', ['/a']);
        $admin = self::$cluster->node($port);
        $admin->rawCommand('CLIENT', 'PAUSE', '4000', 'ALL');
        $start = hrtime(true);
        try {
            $engine->isHeld($ns, $g->grant->id, $g->grant->token);
            $this->fail('a call answered while the master was paused');
        } catch (\Pathlock\Exception\TimeoutException $e) {
            $this->assertStringContainsString('no reply within 0.300 s', $e->getMessage());
        } finally {
            $elapsed = (hrtime(true) - $start) / 1e9;
            $admin->rawCommand('CLIENT', 'UNPAUSE');
        }
        $this->assertLessThan(4.0, $elapsed, 'returned before the master answered');
        $this->assertTrue($g->isHeld(), 'the next call reconnects and works');
        $this->assertTrue($g->release());
    }

    public function testAClusterUrlOfOneNodeFindsTheWholeCluster(): void
    {
        $engine = LockEngine::connect('redis://127.0.0.1:' . self::$cluster->ports[0], Library::fromFile((string) getenv('PATHLOCK_LIBRARY')));
        foreach (self::$cluster->ports as $port) {
            $ns = $this->namespaceOn($port);
            $g = $engine->lock($ns, 'alice', 'upload', ['/a']);
            $this->assertTrue($g->release(), "a namespace on the master at $port");
        }
    }

    public function testADatabaseOtherThanZeroIsRefused(): void
    {
        $this->expectException(\Pathlock\Exception\InvalidRequestException::class);
        $this->expectExceptionMessage('only database 0');
        LockEngine::connect(self::$cluster->url() . '/2', Library::fromFile((string) getenv('PATHLOCK_LIBRARY')));
    }

    public function testThePhpShellWorksOnTheClusterWithoutDeadlines(): void
    {
        $ns = $this->namespaceOn(self::$cluster->ports[2]);
        $held = $this->engine()->lock($ns, 'alice', 'delete_folder', ['/p/A'], ttlMs: 60000);
        $shell = LineProcess::phpShell(self::$cluster->url(), $ns);
        $hello = $shell->ask('hello');
        $this->assertNotContains('deadline', $hello['features'] ?? null, 'a RedisCluster has one read timeout');
        $this->assertContains('keep', $hello['features'] ?? null);
        $e = $shell->ask('acquire bob upload /p/B deadline=5000');
        $this->assertStringContainsString('deadline= needs a read timeout per call', $e['error'] ?? '', json_encode($e));
        $r = $shell->ask('acquire bob upload /p/A/x');
        $this->assertFalse($r['granted'], json_encode($r));
        $this->assertSame($held->grant->id, $r['conflict']['id'] ?? null, json_encode($r));
        $this->assertTrue($held->release());
        $g = $shell->ask('acquire bob upload /p/A/x');
        $this->assertTrue($g['granted'], json_encode($g));
        $this->assertSame(['released' => true], $shell->ask("release {$g['id']} {$g['token']}"));
        $this->assertSame(0, $shell->close());
    }

    public function testTheCppEngineSeesAndWaitsForAPhpLockOnTheCluster(): void
    {
        $ns = $this->namespaceOn(self::$cluster->ports[1]);
        $php = $this->engine();
        $held = $php->lock($ns, 'alice', 'delete_folder', ['/p/A'], ttlMs: 60000);
        $cpp = LineProcess::cppShell(self::$cluster->url(), $ns);
        $r = $cpp->ask('acquire bob upload /p/A/x');
        $this->assertFalse($r['granted'], json_encode($r));
        $this->assertSame($held->grant->id, $r['conflict']['id'] ?? null, json_encode($r));
        $cpp->send('acquire bob upload /p/A/x wait=30000');
        Wait::until(fn () => count($php->waiters($ns)) === 1, 'the C++ request in line');
        $this->assertSame('bob', $php->waiters($ns)[0]->owner ?? null, 'the C++ request waits in line');
        $this->assertTrue($held->release());
        $g = $cpp->read();
        $this->assertTrue($g['granted'], json_encode($g));
        $this->assertSame([$g['id']], array_map(fn($l) => $l->id, $php->list($ns)));
        $this->assertSame(['released' => true], $cpp->ask("release {$g['id']} {$g['token']}"));
        $this->assertSame(0, $cpp->close());
    }

    public function testATlsClusterWithClientCertificates(): void
    {
        $certs = sys_get_temp_dir() . '/pathlock-php-certs-' . bin2hex(random_bytes(6));
        mkdir($certs);
        try {
            exec('sh ' . escapeshellarg(dirname(__DIR__, 3) . '/tools/dev/redis_devtools/make_test_certs.sh') . ' ' . escapeshellarg($certs) . ' 2>&1', $out, $status);
            $this->assertSame(0, $status, implode("\n", $out));
            $tls = new RedisCluster(3, $certs);
            $connect = fn() => LockEngine::connect($tls->url(), Library::fromFile((string) getenv('PATHLOCK_LIBRARY')), tlsOptions: $tls->tlsOptions());
            $ns = 'php-cl-tls-' . bin2hex(random_bytes(4));
            $owner = $tls->masterOf("pl:{{$ns}}:meta");
            $alice = $connect();
            $held = $alice->lock($ns, 'alice', 'delete_folder', ['/p/A']);
            $seen = '';
            $probe = new WaitProbe([function () use ($tls, $owner, $held, &$seen) {
                $seen = implode(' ', (array) $tls->node($owner)->rawCommand('PUBSUB', 'SHARDCHANNELS'));
                return $seen === '' ? null : $held->release();
            }]);
            $r = $connect()->acquire($ns, 'bob', 'upload', ['/p/A/x'], waitMs: 20000, cancellation: $probe);
            $this->assertNotNull($r->grant, 'bob was granted after the release');
            $this->assertSame("pl:{{$ns}}:wake", $seen, 'a TLS subscription with the client certificate on the master of the namespace');
            $this->assertTrue($alice->release($ns, $r->grant->id, $r->grant->token));
            $tls->stop();
        } finally {
            exec('rm -rf ' . escapeshellarg($certs));
        }
    }

    private function hasLibrary(int $port, string $name): bool
    {
        return str_contains(json_encode(self::$cluster->node($port)->rawCommand('FUNCTION', 'LIST', 'LIBRARYNAME', $name)), $name);
    }

    /** @return list<string> the CLIENT LIST lines of sharded subscribers on the master at $port */
    private function subscribers(int $port): array
    {
        $list = (string) self::$cluster->node($port)->rawCommand('CLIENT', 'LIST');
        return array_values(array_filter(explode("\n", $list), fn(string $l) => str_contains($l, 'cmd=ssubscribe') && !str_contains($l, 'ssub=0')));
    }

    /** The shard channels with a subscriber on the master at $port, space-separated. */
    private function channels(int $port): string
    {
        return implode(' ', (array) self::$cluster->node($port)->rawCommand('PUBSUB', 'SHARDCHANNELS'));
    }
}
