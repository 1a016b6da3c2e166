<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Contract;
use Pathlock\LockEngine;
use Pathlock\Shell;
use Pathlock\WaitPolicy;
use Pathlock\Tests\Support\RedisTestCase;

/**
 * Keys, arguments and waiting numbers come from the library's contract
 * (docs/lua-protocol.md#contract-read-only, spec of issue 48): the driver's
 * `protocol` command answers what the engine's own code builds, and it
 * matches what the contract says, derived here independently.
 */
final class ProtocolTest extends RedisTestCase
{
    /** @return array<string,mixed> the decoded answer of one shell line */
    private function ask(string $line): array
    {
        $shell = new Shell($this->engine, $this->ns, STDIN, STDOUT);
        return json_decode(json_encode($shell->answer($line), JSON_THROW_ON_ERROR), true, 64, JSON_THROW_ON_ERROR);
    }

    /** @return array{recheck_ms: int, max_reservation_ms: int, wake_margin_ms: int} */
    private function waiting(): array
    {
        return ($this->engine->contract()->waiting ?? []) + WaitPolicy::BEFORE_4_4;
    }

    public function testTheKeysAreThePatternWithEachSuffix(): void
    {
        $c = json_decode($this->engine->contract()->json, true);
        $want = array_map(fn(string $s): string => "pl:{{$this->ns}}:$s", $c['keys']['suffixes']);
        $this->assertSame('pl:{NS}:<suffix>', $c['keys']['pattern']);
        $this->assertSame($want, $this->engine->contract()->keys($this->ns));
        $this->assertSame($want, LockEngine::keys($this->ns, $this->engine->contract()));
        $this->assertSame($want, $this->ask('protocol upload /x')['keys']);
    }

    public function testTheFirstAttemptsArgumentsFollowTheAcquireEntryByName(): void
    {
        $entry = null;
        foreach (json_decode($this->engine->contract()->json, true)['functions'] as $f) {
            $entry = $f['name'] === 'acquire' ? $f : $entry;
        }
        $w = $this->waiting();
        foreach ([['move_folder /a /b wait=1500', ['/a', '/b'], true, 1500], ['upload /x', ['/x'], true, 0],
                  ['upload /x wait=100 fair=0', ['/x'], false, 100]] as [$line, $paths, $fair, $wait]) {
            $inLine = $fair && $wait > 0;
            $values = ['owner' => 'kit-owner', 'op' => explode(' ', $line)[0], 'ttl_ms' => '1000', 'new_id' => 'kit-id',
                'new_token' => 'kit-token', 'reenter_id' => '', 'reenter_token' => '', 'idempotency_key' => '',
                'fair' => $fair ? '1' : '0', 'waiter_id' => $inLine ? 'kit-waiter' : '',
                'reserve_ms' => (string) ($inLine ? min($wait + $w['recheck_ms'], $w['max_reservation_ms']) : 0),
                'deadline_ms' => '', 'default_limits' => ''];
            $want = [];
            foreach ([$entry['args'], ...$entry['optional']] as $names) {
                foreach ($names as $name) {
                    array_push($want, ...($name === 'path...' ? $paths : [$values[$name]]));
                }
            }
            $this->assertSame($want, $this->ask("protocol $line")['acquire_args'], $line);
        }
    }

    public function testReserveIsTheTimeLeftPlusTheRecheckCappedAtTheMaxReservation(): void
    {
        $w = $this->waiting();
        $got = $this->ask('protocol upload /x wait=100')['reserve_ms'];
        foreach ([1, 150, 1799, 1800, 1801, 2500, 60000] as $left) {
            $this->assertSame(min($left + $w['recheck_ms'], $w['max_reservation_ms']), $got[(string) $left], "left $left");
        }
        $policy = WaitPolicy::fromContract($this->engine->contract());
        $this->assertSame(0, $policy->reserveMs(0, true), 'the attempt at the deadline');
        $this->assertSame(0, $policy->reserveMs(500, false), 'no place in line');
    }

    public function testALibraryWithoutWaitingUsesTheOneFallback(): void
    {
        $c = json_decode($this->engine->contract()->json, true);
        unset($c['waiting']);
        $older = WaitPolicy::fromContract(Contract::fromJson((string) json_encode($c)));
        $this->assertSame([200, 2000, 1], [$older->recheckMs, $older->maxReservationMs, $older->wakeMarginMs]);
        $this->assertSame([LockEngine::RECHECK_MS, LockEngine::MAX_RESERVATION_MS], [200, 2000]);
    }

    public function testBadInputIsAnError(): void
    {
        $this->assertStringContainsString('unknown operation', $this->ask('protocol nosuch /x')['error']);
        $this->assertStringContainsString('usage: protocol', $this->ask('protocol upload')['error']);
        $this->assertStringContainsString('fair=', $this->ask('protocol upload /x fair=2')['error']);
        $this->assertStringContainsString('takes 2 target', $this->ask('protocol move_folder /a')['error']);
    }
}
