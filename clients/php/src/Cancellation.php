<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * Stops a waiting acquire early. PHP serves one request per process, so a
 * wait normally ends at its deadline; a caller that must stop sooner (a
 * driver reading `cancel` from its stdin) passes a Cancellation: the wait
 * watches its streams beside the wake-up subscription and asks
 * isCancelled() whenever one becomes readable and before every attempt.
 * A cancelled acquire leaves the line; a grant that raced the cancellation
 * is released before acquire() answers `cancelled`. A conversion
 * (LockEngine::convert()) is never undone: its grant is the answer.
 */
interface Cancellation
{
    /** @return list<resource> streams whose becoming readable may mean "cancelled" */
    public function streams(): array;

    /** Whether the wait must stop now (must not block). */
    public function isCancelled(): bool;
}
