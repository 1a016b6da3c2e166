<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Cancellation;
use Pathlock\Library;
use Pathlock\LockEngine;
use Pathlock\Tests\Support\RedisServer;
use PHPUnit\Framework\TestCase;

/**
 * rediss:// with a private CA and client certificates (mutual TLS; the
 * certificates made by tools/dev/redis_devtools/make_test_certs.sh with
 * openssl): the command connection and the wake-up subscription both use the
 * engine's TLS options. The server asks every client for a certificate, so a
 * subscription opened without them would fail (and the wait would fall back
 * to polling): the test sees the subscription on the server while the
 * waiter waits.
 */
final class TlsTest extends TestCase
{
    private static string $certs;
    private static ?RedisServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$certs = sys_get_temp_dir() . '/pathlock-php-certs-' . bin2hex(random_bytes(6));
        mkdir(self::$certs);
        $script = dirname(__DIR__, 3) . '/tools/dev/redis_devtools/make_test_certs.sh';
        exec('sh ' . escapeshellarg($script) . ' ' . escapeshellarg(self::$certs) . ' 2>&1', $out, $status);
        self::assertSame(0, $status, implode("\n", $out));
        self::$server = new RedisServer(self::$certs);
    }

    public static function tearDownAfterClass(): void
    {
        self::$server?->stop();
        self::$server = null;
        exec('rm -rf ' . escapeshellarg(self::$certs));
    }

    private function engine(): LockEngine
    {
        return LockEngine::connect(
            'rediss://localhost:' . self::$server->tlsPort,
            Library::fromFile((string) getenv('PATHLOCK_LIBRARY')),
            tlsOptions: [
                'cafile' => self::$certs . '/ca.crt',
                'local_cert' => self::$certs . '/client.crt',
                'local_pk' => self::$certs . '/client.key',
            ],
        );
    }

    public function testWithoutTheCaTheConnectionIsRefused(): void
    {
        $this->expectException(\Pathlock\Exception\BackendException::class);
        $e = LockEngine::connect('rediss://localhost:' . self::$server->tlsPort,
            Library::fromFile((string) getenv('PATHLOCK_LIBRARY')));
        $e->list('php-tls');
    }

    public function testAWaiterIsWokenThroughATlsSubscription(): void
    {
        $ns = 'php-tls-' . bin2hex(random_bytes(4));
        $alice = $this->engine();
        $held = $alice->lock($ns, 'alice', 'delete_folder', ['/p/A']);
        $hook = new ReleaseWhenSubscribed(self::$server->client(), fn() => $held->release());
        $r = $this->engine()->acquire($ns, 'bob', 'upload', ['/p/A/x'], waitMs: 20000, cancellation: $hook);
        $this->assertNotNull($r->grant, 'bob was granted after the release');
        $this->assertStringContainsString('cmd=ssubscribe', $hook->seen, 'a TLS connection subscribed while bob waited');
        $this->assertTrue($held->isReleased());
        $this->assertTrue($alice->release($ns, $r->grant->id, $r->grant->token));
    }
}

/**
 * A Cancellation used as a probe: its stream is readable at once, so the
 * wait asks isCancelled() as soon as it sleeps (after it subscribed); then
 * it reads the server's client list (the subscription must be there),
 * releases the blocking lock and goes quiet. It never cancels.
 */
final class ReleaseWhenSubscribed implements Cancellation
{
    /** @var array{resource, resource} */
    private array $pair;
    public string $seen = '';

    /** @param \Closure(): mixed $release */
    public function __construct(private readonly \Redis $admin, private readonly \Closure $release)
    {
        $this->pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        fwrite($this->pair[1], 'x');
    }

    public function streams(): array
    {
        return [$this->pair[0]];
    }

    public function isCancelled(): bool
    {
        if ($this->seen === '') {
            fread($this->pair[0], 1);
            $list = $this->admin->rawCommand('CLIENT', 'LIST');
            $this->seen = implode("\n", array_filter(explode("\n", (string) $list),
                fn(string $l) => str_contains($l, 'cmd=ssubscribe')));
            $this->seen = $this->seen === '' ? '(no subscription)' : $this->seen;
            ($this->release)();
        }
        return false;
    }
}
