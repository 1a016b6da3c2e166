<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * A request waiting in line (LockEngine::waiters()); targets is role => path.
 * converts: for a waiting conversion the id of the lock it converts (op and
 * targets are then what it converts to), '' for a waiting acquire.
 */
final readonly class WaiterInfo
{
    /** @param array<string,string> $targets */
    public function __construct(
        public string $id,
        public string $owner,
        public string $op,
        public array $targets,
        public int $waitedMs,
        public int $expiresInMs,
        public string $converts = '',
    ) {
    }
}
