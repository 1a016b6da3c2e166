<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * What refused a request: a held lock, or (queued) an older request waiting
 * in line, named by its waiter id; expiresInMs is then what is left of its
 * reservation. relation: same, held_ancestor or held_descendant.
 */
final readonly class Conflict
{
    public function __construct(
        public string $id,
        public string $op,
        public string $role,
        public string $path,
        public string $owner,
        public int $expiresInMs,
        public string $requestedRole,
        public string $requestedPath,
        public string $relation,
        public bool $queued,
    ) {
    }
}
