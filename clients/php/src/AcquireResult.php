<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * The answer of LockEngine::acquire(): exactly one of grant (granted),
 * conflict (refused), notHolder (a reentry proof naming no live lock),
 * cancelled (a Cancellation stopped the wait; nothing is held) or overLimit
 * (a limit of the namespace refused it, at once even when it would wait;
 * nothing is held).
 */
final readonly class AcquireResult
{
    private function __construct(
        public ?Grant $grant,
        public ?Conflict $conflict,
        public bool $notHolder,
        public bool $cancelled,
        public ?LimitRefusal $overLimit = null,
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
