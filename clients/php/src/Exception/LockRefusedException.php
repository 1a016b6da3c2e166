<?php

declare(strict_types=1);

namespace Pathlock\Exception;

use Pathlock\AcquireResult;

/**
 * LockEngine::lock() and withLock() gave no lock. One subclass per outcome:
 * LockConflictedException (a lock or an older waiter refused it; after
 * waiting, when it waited), NotHolderException (a reentry's proof named no
 * live lock), AcquireCancelledException (a Cancellation stopped the wait),
 * OverLimitException (a limit of the namespace refused it).
 * acquire() answers these outcomes as an AcquireResult instead.
 */
abstract class LockRefusedException extends PathlockException
{
    /** The exception for a result that holds no grant. */
    public static function fromResult(AcquireResult $result): self
    {
        return match (true) {
            $result->conflict !== null => new LockConflictedException($result->conflict),
            $result->notHolder => new NotHolderException(),
            $result->cancelled => new AcquireCancelledException(),
            $result->overLimit !== null => new OverLimitException($result->overLimit),
            default => throw new \LogicException('a granted result is no refusal'),
        };
    }
}
