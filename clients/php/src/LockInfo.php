<?php

declare(strict_types=1);

namespace Pathlock;

/** One live lock as list() reports it; targets is role => path in the matrix's role order. */
final readonly class LockInfo
{
    /** @param array<string,string> $targets */
    public function __construct(
        public string $id,
        public string $owner,
        public string $op,
        public int $fence,
        public int $holds,
        public int $expiresInMs,
        public array $targets,
    ) {
    }
}
