<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * The answer of LockEngine::acquire() and LockEngine::convert(): exactly one
 * of grant (granted), conflict (refused), notHolder (a reentry or conversion
 * proof naming no live lock), cancelled (a Cancellation stopped the wait;
 * nothing is held, a lock being converted is as it was) or overLimit (a limit
 * of the namespace refused it, at once even when it would wait; nothing is
 * held). A conversion's refusal may also be wouldDeadlock: conflict names a
 * lock that is itself waiting to convert to something this lock refuses, so
 * the two would wait for each other; answered at once, the lock as it was.
 */
final readonly class AcquireResult
{
    private function __construct(
        public ?Grant $grant,
        public ?Conflict $conflict,
        public bool $notHolder,
        public bool $cancelled,
        public ?LimitRefusal $overLimit = null,
        public bool $wouldDeadlock = false,
    ) {
    }

    public static function granted(Grant $grant): self
    {
        return new self($grant, null, false, false);
    }

    public static function refused(Conflict $conflict): self
    {
        return new self(null, $conflict, false, false);
    }

    /** A conversion refused because $conflict (a lock) waits to convert to something the converting lock refuses. */
    public static function wouldDeadlock(Conflict $conflict): self
    {
        return new self(null, $conflict, false, false, null, true);
    }

    public static function notHolder(): self
    {
        return new self(null, null, true, false);
    }

    public static function cancelled(): self
    {
        return new self(null, null, false, true);
    }

    public static function overLimit(LimitRefusal $refusal): self
    {
        return new self(null, null, false, false, $refusal);
    }

    public function isGranted(): bool
    {
        return $this->grant !== null;
    }
}
