<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;
use Pathlock\Library;
use Pathlock\LockEngine;
use Pathlock\Tests\Support\RedisTestCase;

/**
 * The library's contract (FCALL_RO <prefix>contract 0, protocol 4.2) is what
 * the engine knows of operations, roles and limits: a real redis-server's
 * answer, the block docs/lua-protocol.md shows, and an older library (no
 * `contract`) refused with an error naming the protocol.
 */
final class ContractTest extends RedisTestCase
{
    /** docs/lua-protocol.md's contract block, decoded. */
    private static function documented(): array
    {
        $doc = (string) file_get_contents(dirname(__DIR__, 3) . '/docs/lua-protocol.md');
        $block = substr($doc, (int) strpos($doc, '<!-- contract -->'));
        $block = substr($block, 0, (int) strpos($block, '<!-- /contract -->'));
        $json = substr($block, (int) strpos($block, '{'), strrpos($block, '}') - strpos($block, '{') + 1);
        return json_decode($json, true, 64, JSON_THROW_ON_ERROR);
    }

    /** The shipped library as one older than 4.2 would be: another name, no function `contract`. */
    private static function olderLibrary(): string
    {
        $code = (string) self::library()->code;
        $hash = substr(self::library()->name, strlen('pathlock_v4_'));
        $line = '/^.*\{ "contract", Contract\.contract, .*\n/m';
        self::assertMatchesRegularExpression($line, $code, 'the library registers contract');
        return str_replace($hash, str_repeat('f', strlen($hash)), (string) preg_replace($line, '', $code));
    }

    public function testTheContractIsTheLibrarysAnswerAndTheDocumentedOne(): void
    {
        $c = $this->engine->contract();
        $raw = static::$server->client()->rawCommand('FCALL_RO', self::library()->functionPrefix . 'contract', '0');
        $this->assertSame(json_decode($raw[1], true), json_decode($c->json, true));
        $this->assertEquals(self::documented(), json_decode($c->json, true));
        $this->assertSame('4.6', $c->protocol);
        $this->assertTrue($c->atLeast('4.2'));
        $this->assertSame(['src', 'dst'], $c->roles('move_folder'));
        $this->assertNull($c->roles('no_such_op'));
        $this->assertSame(256, $c->limit('owner_bytes'));
    }

    public function testAnOptionalGroupThisClientDoesNotKnowIsNotSent(): void
    {
        $json = json_decode($this->engine->contract()->json, true);
        foreach ($json['functions'] as &$f) {
            if ($f['name'] === 'waiters') {
                $f['optional'][] = ['a_newer_argument'];
            }
        }
        unset($f);
        $codec = new \Pathlock\Codec(\Pathlock\Contract::fromJson((string) json_encode($json)));
        $this->assertSame(['/p', '10'], $codec->args('waiters', ['prefix' => '/p', 'limit' => '10']));
        $this->expectException(BackendException::class);
        $codec->args('waiters', ['prefix' => '/p']); // a required one is an error
    }

    public function testAnEngineGivenOnlyThePrefixKnowsRolesAndLimits(): void
    {
        $this->engine->loadLibrary();
        $byPrefix = new LockEngine(static::$server->client(), Library::fromPrefix(self::library()->functionPrefix));
        $g = $byPrefix->acquire($this->ns, 'a', 'move_folder', ['src' => '/s', 'dst' => '/d'])->grant;
        $this->assertNotNull($g);
        $this->assertTrue($byPrefix->release($this->ns, $g->id, $g->token));
        $limit = $byPrefix->contract()->limit('owner_bytes');
        try {
            $byPrefix->acquire($this->ns, str_repeat('x', $limit + 1), 'upload', ['/u']);
            $this->fail('an owner over the limit was accepted');
        } catch (InvalidRequestException $e) {
            $this->assertStringContainsString("the limit is $limit", $e->getMessage());
        }
        // the server checks what the contract does not say (a destination inside its source)
        $this->expectException(InvalidRequestException::class);
        $byPrefix->acquire($this->ns, 'a', 'move_folder', ['/s', '/s/in']);
    }

    public function testALibraryOlderThanProtocol42IsRefusedNamingTheProtocol(): void
    {
        $older = LockEngine::connect(static::$server->url, Library::fromCode(self::olderLibrary()));
        try {
            $older->acquire($this->ns, 'a', 'upload', ['/u']);
            $this->fail('an older library was used');
        } catch (BackendException $e) {
            $this->assertStringContainsString('older than protocol 4.2', $e->getMessage());
        }
        // it was missing, so the engine loaded it: the refusal is about the library
        $list = static::$server->client()->rawCommand('FUNCTION', 'LIST', 'LIBRARYNAME', $older->library()->name);
        $this->assertCount(1, $list);
    }

    public function testLoadingRefusesAnotherLibraryUnderTheSameName(): void
    {
        $this->engine->loadLibrary();
        $this->engine->loadLibrary();   // idempotent
        $redis = static::$server->client();
        $redis->rawCommand('FUNCTION', 'LOAD', 'REPLACE', rtrim((string) self::library()->code) . "\n-- another build of the same name\n");
        try {
            $this->engine->loadLibrary();
            $this->fail('another library under the same name was accepted');
        } catch (BackendException $e) {
            $this->assertStringContainsString('another library named ' . self::library()->name, $e->getMessage());
        } finally {
            $redis->rawCommand('FUNCTION', 'LOAD', 'REPLACE', (string) self::library()->code);
        }
    }

    public function testTheBundledLibraryIsLookedForInsideThePackage(): void
    {
        $this->assertSame(dirname(__DIR__) . '/library/pathlock_library.lua', Library::bundledFile());
        if (!is_file(Library::bundledFile())) {
            // a checkout, which does not hold the file
            $this->expectException(InvalidRequestException::class);
            $this->expectExceptionMessage(Library::bundledFile());
        }
        $this->assertMatchesRegularExpression('/\Apathlock_v4_/', Library::bundled()->name);
    }
}
