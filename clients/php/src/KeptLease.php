<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * One lease kept by a LeaseKeeper (docs/php.md "Keeping a lease"): the
 * grant, and whether the keeper found it lost. Made by LeaseKeeper::keep().
 */
final class KeptLease
{
    /** Why it was lost: the lock was gone, or its end passed while renewals failed. */
    public const MISSING = 'missing';
    public const EXPIRED = 'expired';

    /** @internal the keeper's schedule, in ms of hrtime */
    public float $endsAt;
    /** @internal */
    public float $renewAt;
    /** @internal */
    public bool $stopped = false;
    private ?string $lostReason = null;
    private ?\Throwable $lastError = null;
    private int $renewals = 0;

    /** @param ?\Closure(KeptLease): void $onLost */
    public function __construct(
        private readonly LeaseKeeper $keeper,
        public readonly string $namespace,
        public readonly Grant $grant,
        public readonly int $ttlMs,
        private readonly ?\Closure $onLost,
        float $now,
    ) {
        $this->endsAt = $now + ($grant->expiresInMs > 0 ? $grant->expiresInMs : $ttlMs);
        $this->renewAt = $now + $ttlMs * $keeper->renewAfter;
    }

    /** True once the lease is known lost; never goes back to false. */
    public function isLost(): bool
    {
        return $this->lostReason !== null;
    }

    /** KeptLease::MISSING or KeptLease::EXPIRED once lost, else null. */
    public function lostReason(): ?string
    {
        return $this->lostReason;
    }

    /** The last renewal's BackendException, if renewals failed. */
    public function lastError(): ?\Throwable
    {
        return $this->lastError;
    }

    /** Successful renewals so far. */
    public function renewals(): int
    {
        return $this->renewals;
    }

    /** Stops keeping it (the lock stays until released or expired). */
    public function stop(): void
    {
        $this->keeper->stop($this);
    }

    /** @internal a renewal went through at $sent (ms) */
    public function renewed(float $sent): void
    {
        $this->renewals++;
        $this->endsAt = $sent + $this->ttlMs;
        $this->renewAt = $sent + $this->ttlMs * $this->keeper->renewAfter;
    }

    /** @internal a renewal failed with $e at $now (ms): try again soon, while the lease lasts */
    public function failed(\Throwable $e, float $now): void
    {
        $this->lastError = $e;
        $this->renewAt = $now + min($this->keeper->retryMs, max(0.0, $this->endsAt - $now));
    }

    /** @internal marks it lost and calls onLost once */
    public function lose(string $reason): void
    {
        if ($this->lostReason !== null || $this->stopped) {
            return;
        }
        $this->lostReason = $reason;
        if ($this->onLost !== null) {
            ($this->onLost)($this);
        }
    }
}
