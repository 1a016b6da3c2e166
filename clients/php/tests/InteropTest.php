<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Tests\Support\LineProcess;
use Pathlock\Tests\Support\RedisTestCase;
use Pathlock\Tests\Support\Wait;

/** The PHP client and the C++ engine (`pathlock shell --backend redis`) on one server and namespace. */
final class InteropTest extends RedisTestCase
{
    private function awaitWaiters(int $n): void
    {
        Wait::until(fn () => count($this->engine->waiters($this->ns)) === $n, "$n waiter(s)");
    }

    public function testCppHoldsPhpIsRefusedThenWaitsForTheCppRelease(): void
    {
        $cpp = LineProcess::cppShell(static::$server->url, $this->ns);
        $g = $cpp->ask('acquire alice move_folder /p/A/C /p/B ttl=60000');
        $this->assertTrue($g['granted'], json_encode($g));

        $r = $this->engine->acquire($this->ns, 'carol', 'upload', ['/p/A/C/D']);
        $this->assertSame([$g['id'], 'src', 'held_ancestor', 'alice'], [$r->conflict->id, $r->conflict->role, $r->conflict->relation, $r->conflict->owner]);
        $this->assertSame($g['fence'], $this->engine->list($this->ns)[0]->fence);

        // PHP holds the lock C++ asks for: C++ waits in line, PHP sees it, releases, C++ gets it
        $mine = $this->engine->acquire($this->ns, 'dave', 'upload', ['/q/x'])->grant;
        $cpp->send('acquire erin delete_folder /q wait=60000');
        $this->awaitWaiters(1);
        $this->assertSame('erin', $this->engine->waiters($this->ns)[0]->owner);
        $this->assertTrue($this->engine->release($this->ns, $mine->id, $mine->token));
        $this->assertTrue($cpp->read()['granted']);
        $this->assertSame([], $this->engine->waiters($this->ns));

        // C++ releases what it held; PHP's lock taken after is fenced higher
        $this->assertSame(['released' => true], $cpp->ask("release {$g['id']} {$g['token']}"));
        $after = $this->engine->acquire($this->ns, 'carol', 'upload', ['/p/A/C/D'])->grant;
        $this->assertGreaterThan($g['fence'], $after->fence);
        $this->assertSame(0, $cpp->close());
    }

    public function testPhpWaitsAndIsWokenByTheCppRelease(): void
    {
        $cpp = LineProcess::cppShell(static::$server->url, $this->ns);
        $g = $cpp->ask('acquire alice delete_folder /p/A ttl=60000');
        $php = LineProcess::phpShell(static::$server->url, $this->ns);
        $php->send('acquire bob upload /p/A/x wait=60000');
        $this->awaitWaiters(1);
        $this->assertSame(['released' => true], $cpp->ask("release {$g['id']} {$g['token']}"));
        $answer = $php->read();
        $this->assertTrue($answer['granted']);
        // each sees the other's lock, with the same fields
        $cppLocks = $cpp->ask('locks');
        $phpLocks = $php->ask('locks');
        $strip = fn(array $l) => array_diff_key($l, ['expires_in_ms' => 1]);
        $this->assertSame(array_map($strip, $cppLocks['locks']), array_map($strip, $phpLocks['locks']));
        $this->assertSame(['held' => true], $cpp->ask("held {$answer['id']} {$answer['token']}"));
        $php->close();
        $cpp->close();
    }

    public function testTheDriverAnswersLikeTheCppShell(): void
    {
        $lines = [
            'acquire "bob smith" delete_folder "/p/My Documents"',
            'acquire carol upload "/p/My Documents/x"',
            'acquire x move_folder /p/A /p/A/B',
            'acquire x upload relative',
            'acquire x upload /p ttl=0',
            'acquire x upload /p fair=maybe',
            'acquire x upload /p reenter=abc',
            'acquire x upload /p key=a key=b',
            'acquire x nope /p',
            'acquire x upload /p /q',
            'locks / after=3',
            'locks / limit=0',
            'release a',
            "renew a b c",
            'held no-such-id tok',
            'release no-such-id tok',
            'force-release no-such-id',
            'acquire x upload "/p\\q"',
            "acquire x upload /p\r",
            'acquire x upload "/unterminated',
            'convert a b upload',
            'convert a b nope /p',
            'convert a b upload /p fair=maybe',
            'convert a b upload /p reenter=x',
            'convert a b upload /p ttl=0',
            'convert no-such-id tok upload /p/conv',
        ];
        $ns = $this->ns;
        $cpp = LineProcess::cppShell(static::$server->url, $ns);
        $php = LineProcess::phpShell(static::$server->url, $ns . '-php');
        foreach ($lines as $line) {
            $a = $cpp->ask($line);
            $b = $php->ask($line);
            $norm = function (array $x): array {
                unset($x['id'], $x['token'], $x['fence'], $x['expires_in_ms']);
                if (isset($x['conflict'])) {
                    unset($x['conflict']['id'], $x['conflict']['expires_in_ms']);
                }
                return $x;
            };
            $this->assertSame($norm($a), $norm($b), $line);
        }
        $cpp->close();
        $php->close();
    }
}
