<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * A held lock (queued false) or a place in line (queued true) that would
 * refuse a request now (LockEngine::blockers()).
 */
final readonly class Blocker
{
    public function __construct(
        public bool $queued,
        public string $id,
        public string $owner,
        public string $op,
        public string $role,
        public string $path,
        public string $requestedRole,
        public string $requestedPath,
        public string $relation,
        public int $fence,
        public int $holds,
        public int $expiresInMs,
        public int $waitedMs,
    ) {
    }
}
