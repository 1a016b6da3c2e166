<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * @internal The waiting policy (as src/core/waiting.cpp is for the C++
 * engine; docs/lua-protocol.md#waiting-and-the-line): the wait loop of a
 * refused acquire and the one function that computes an attempt's
 * reserve_ms, with the numbers of the library's contract (`waiting`).
 *
 * The loop attempts until granted, the deadline, or the cancellation;
 * between attempts it sleeps until the first of the deadline, the re-check,
 * the conflict's end plus the wake margin, and a wake-up naming an
 * overlapping path. The attempt made at the deadline is the last.
 */
final class WaitPolicy
{
    /**
     * The waiting numbers of a library older than protocol 4.4, whose
     * contract has no `waiting` (contract.waiting.recheck_ms,
     * max_reservation_ms, wake_margin_ms): the only place they are spelled.
     */
    public const BEFORE_4_4 = ['recheck_ms' => 200, 'max_reservation_ms' => 2000, 'wake_margin_ms' => 1];

    public function __construct(
        public readonly int $recheckMs,
        public readonly int $maxReservationMs,
        public readonly int $wakeMarginMs,
    ) {
    }

    /** The numbers of $contract's `waiting`, or BEFORE_4_4 for an older library. */
    public static function fromContract(Contract $contract): self
    {
        $w = ($contract->waiting ?? []) + self::BEFORE_4_4;
        return new self($w['recheck_ms'], $w['max_reservation_ms'], $w['wake_margin_ms']);
    }

    /**
     * reserve_ms of an attempt with $leftMs (whole ms, rounded up) of its
     * wait left: min(left + recheck, max reservation), so the last attempt
     * still finds its own place; 0 for the attempt at the deadline
     * ($leftMs <= 0) and for a request that takes no place in line.
     */
    public function reserveMs(int $leftMs, bool $inLine): int
    {
        return !$inLine || $leftMs <= 0 ? 0 : min($leftMs + $this->recheckMs, $this->maxReservationMs);
    }

    /**
     * The wait loop of acquire() and convert() (docs/php.md "Waiting"). The
     * caller leaves the line when this throws.
     *
     * @param list<string> $paths the request's paths (a wake-up naming an overlapping one ends a sleep)
     * @param \Closure(int): AcquireResult $attempt one attempt with that reserve_ms
     * @param \Closure(): ?WakeSubscription $subscribe the wake-up subscription, null when it cannot be made
     * @param (\Closure(Grant): void)|null $giveBack releases a grant that raced the cancellation; null keeps it and
     *   returns it (a conversion: the lock's old operation may no longer fit beside what was granted since)
     * @param \Closure(): void $leave takes the place out of the line (a cancelled fair request)
     */
    public function wait(
        float $deadline,
        bool $inLine,
        array $paths,
        ?Cancellation $cancellation,
        \Closure $attempt,
        \Closure $subscribe,
        ?\Closure $giveBack,
        \Closure $leave,
    ): AcquireResult {
        $sub = null;
        $waited = false;
        try {
            while (true) {
                $left = (int) ceil($deadline - Transport::nowMs());
                $out = $attempt($this->reserveMs($left, $inLine));
                if ($out->grant !== null && $giveBack !== null && $waited && $cancellation?->isCancelled()) {
                    $giveBack($out->grant);   // a grant that raced the cancellation: given back, never dropped
                    return AcquireResult::cancelled();
                }
                if ($out->conflict === null || $out->wouldDeadlock || $left <= 0) {
                    // (over a limit or would deadlock: at once; the library took the place out of the line)
                    return $out;
                }
                if (!$waited || ($sub !== null && $sub->isBroken())) {
                    // Subscribe (again), then look again at once: a removal between
                    // the attempt and the subscription would be missed.
                    $waited = true;
                    $sub?->close();
                    $sub = $subscribe();
                    continue;
                }
                $now = Transport::nowMs();
                $until = min($deadline, $now + $this->recheckMs, $now + $out->conflict->expiresInMs + $this->wakeMarginMs);
                if (self::sleepUntil($until, $sub, $paths, $cancellation) || $cancellation?->isCancelled()) {
                    if ($inLine) {
                        $leave();
                    }
                    return AcquireResult::cancelled();
                }
            }
        } finally {
            $sub?->close();
        }
    }

    /**
     * Sleeps until $until (ms, Transport::nowMs() clock), or until a wake-up
     * names a path that overlaps one of $paths (or is empty), or the
     * subscription broke. Returns true when the cancellation fired.
     *
     * @param list<string> $paths
     */
    private static function sleepUntil(float $until, ?WakeSubscription $sub, array $paths, ?Cancellation $cancellation): bool
    {
        while (true) {
            if ($sub !== null && $sub->hasPending() && self::wakes($sub->take(), $paths)) {
                return false;
            }
            $left = $until - Transport::nowMs();
            if ($left <= 0) {
                return false;
            }
            $read = $cancellation?->streams() ?? [];
            if ($sub !== null && !$sub->isBroken()) {
                $read[] = $sub->stream();
            }
            $us = (int) ceil($left * 1000);
            if ($read === []) {
                usleep($us);
                return false;
            }
            $write = $except = null;
            if (@stream_select($read, $write, $except, intdiv($us, 1000000), $us % 1000000) === false) {
                usleep(min($us, 10000));   // interrupted by a signal: look again
                continue;
            }
            foreach ($read as $stream) {
                if ($sub !== null && $stream === $sub->stream()) {
                    if (self::wakes($sub->take(), $paths) || $sub->isBroken()) {
                        return false;
                    }
                } elseif ($cancellation !== null && $cancellation->isCancelled()) {
                    return true;
                }
            }
        }
    }

    /**
     * Whether one of the wake-up payloads (removed paths joined by "\n")
     * overlaps one of the request's paths; an empty payload means "look again".
     *
     * @param list<string> $payloads
     * @param list<string> $paths
     */
    private static function wakes(array $payloads, array $paths): bool
    {
        foreach ($payloads as $payload) {
            if ($payload === '') {
                return true;
            }
            foreach (explode("\n", $payload) as $removed) {
                foreach ($paths as $p) {
                    if (Paths::overlap($removed, $p)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }
}
