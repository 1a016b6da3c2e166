<?php

declare(strict_types=1);

namespace Pathlock;

/** A request waiting in line (LockEngine::waiters()); targets is role => path. */
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
    ) {
    }
}
