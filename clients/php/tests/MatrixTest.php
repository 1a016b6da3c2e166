<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Tests\Support\RedisTestCase;

/** Every case of matrix-cases.json (the shipped matrix): grant or refusal, and the lock a refusal names. */
final class MatrixTest extends RedisTestCase
{
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
