<?php

declare(strict_types=1);

namespace Pathlock;

/** The answer of blockers(): truncated when there were more than `limit`. */
final readonly class BlockersPage
{
    /** @param list<Blocker> $blockers */
    public function __construct(public array $blockers, public bool $truncated)
    {
    }
}
