<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Exception\InvalidRequestException;
use Pathlock\Paths;
use Pathlock\Tests\Support\RedisTestCase;

/**
 * The shared test vectors (docs/lua-protocol.md#test-vectors). paths.json: the canonical form of every
 * spelling, and every path refused before Redis is called. matrix-cases.json (the shipped matrix): grant or
 * refusal, and the lock a refusal names.
 */
final class VectorsTest extends RedisTestCase
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

    public function testEveryCaseOfTheMatrix(): void
    {
        $doc = self::vectors('matrix-cases.json');
        $this->assertGreaterThan(100, count($doc['cases']));
        foreach ($doc['cases'] as $i => $c) {
            $ns = "{$this->ns}-$i";
            $what = "case $i: {$c['held_op']}.{$c['held_role']} held, {$c['requested_op']}.{$c['requested_role']} requested, {$c['relation']}";
            $held = $this->engine->acquire($ns, 'holder', $c['held_op'], $c['held_targets']);
            $this->assertNotNull($held->grant, $what);
            $r = $this->engine->acquire($ns, 'requester', $c['requested_op'], $c['requested_targets']);
            $this->assertSame($c['granted'], $r->isGranted(), $what);
            if (!$c['granted']) {
                $this->assertSame($held->grant->id, $r->conflict->id, $what);
                $this->assertSame($c['held_role'], $r->conflict->role, $what);
                $this->assertSame($c['held_path'], $r->conflict->path, $what);
                $this->assertSame($c['held_op'], $r->conflict->op, $what);
                $this->assertSame($c['requested_role'], $r->conflict->requestedRole, $what);
                $this->assertSame($c['relation'], $r->conflict->relation, $what);
                $this->assertFalse($r->conflict->queued, $what);
            } else {
                $this->assertTrue($this->engine->release($ns, $r->grant->id, $r->grant->token), $what);
            }
            $this->assertTrue($this->engine->release($ns, $held->grant->id, $held->grant->token), $what);
        }
    }
}
