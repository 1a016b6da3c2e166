<?php

declare(strict_types=1);

namespace Pathlock;

/** A granted lock: what release, renew, held and reentry need, and the fence for storage writes. */
final readonly class Grant
{
    public function __construct(
        public string $id,
        public string $token,
        public int $fence,
        public int $expiresInMs,
        public int $holds,
    ) {
    }
}
