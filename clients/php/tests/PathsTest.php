<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Exception\InvalidRequestException;
use Pathlock\Paths;
use Pathlock\Tests\Support\RedisTestCase;

/** paths.json: the canonical form of every spelling, and every path refused before Redis is called. */
final class PathsTest extends RedisTestCase
{
    public function testNormalizeVectors(): void
    {
        $doc = self::vectors('paths.json');
        foreach ($doc['normalize'] as $v) {
            $this->assertSame($v['canonical'], Paths::normalize((string) hex2bin($v['input_hex'])), $v['input_hex']);
        }
        foreach ($doc['invalid'] as $v) {
            try {
                Paths::normalize((string) hex2bin($v['input_hex']));
                $this->fail("accepted {$v['input_hex']} ({$v['reason']})");
            } catch (InvalidRequestException) {
                $this->addToAssertionCount(1);
            }
        }
    }

    public function testAnInvalidPathIsRefusedAndNothingIsTaken(): void
    {
        foreach (self::vectors('paths.json')['invalid'] as $v) {
            try {
                $this->engine->acquire($this->ns, 'ann', 'upload', ['target' => (string) hex2bin($v['input_hex'])]);
                $this->fail("acquired {$v['input_hex']}");
            } catch (InvalidRequestException $e) {
                $this->assertStringStartsWith('target path: ', $e->getMessage());
            }
        }
        $this->assertSame([], $this->engine->list($this->ns));
    }

    public function testSpellingsOfOnePathAreOnePath(): void
    {
        $g = $this->engine->acquire($this->ns, 'ann', 'delete_folder', ['target' => '/p//A/'])->grant;
        $this->assertNotNull($g);
        $r = $this->engine->acquire($this->ns, 'bob', 'upload', ['/p/A/x']);
        $this->assertSame('/p/A', $r->conflict->path);
        $this->assertSame('held_ancestor', $r->conflict->relation);
    }
}
