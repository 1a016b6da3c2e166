<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;

/**
 * A namespace's limits and its use of them (LockEngine::limits()): the
 * default of every namespace, the namespace's own (null: none; they replace
 * the default whole), what is enforced, its live locks and places in line
 * now, and the owner with the most live locks ('' when none; on a tie the
 * first by name) with that count.
 */
final readonly class LimitsStatus
{
    public function __construct(
        public Limits $defaults,
        public ?Limits $own,
        public Limits $effective,
        public int $locks,
        public int $places,
        public int $ownerLocks,
        public string $owner,
    ) {
    }

    /** @param array<int,mixed> $r limits_ro's {"limits", own, locks, places, owner_locks, owner} */
    public static function fromReply(array $r, string $defaultText): self
    {
        if (($r[0] ?? null) !== 'limits') {
            throw new BackendException('limits_ro: unexpected reply');
        }
        $defaults = Limits::parse($defaultText) ?? new Limits();
        $own = (string) $r[1] === '' ? null : Limits::parse((string) $r[1]);
        return new self($defaults, $own, $own ?? $defaults, (int) $r[2], (int) $r[3], (int) $r[4], (string) $r[5]);
    }
}
