<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;

/**
 * A request refused by a limit of its namespace (AcquireResult::$overLimit):
 * the limit (LOCKS, PLACES or OWNER_LOCKS), its value, and what the
 * namespace (or the owner) has now, at least $max. Nothing was taken, no
 * place in line kept; a waiting request gets it at once.
 */
final readonly class LimitRefusal
{
    public const LOCKS = 'locks';
    public const PLACES = 'places';
    public const OWNER_LOCKS = 'owner_locks';

    public function __construct(
        public string $limit,
        public int $max,
        public int $count,
    ) {
    }

    /** @param array<int,mixed> $r acquire's {"over_limit", limit, max, count} */
    public static function fromReply(array $r): self
    {
        $limit = (string) ($r[1] ?? '');
        if (!in_array($limit, [self::LOCKS, self::PLACES, self::OWNER_LOCKS], true)) {
            throw new BackendException("acquire: over_limit names an unknown limit '$limit'");
        }
        return new self($limit, (int) ($r[2] ?? 0), (int) ($r[3] ?? 0));
    }
}
