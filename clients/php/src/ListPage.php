<?php

declare(strict_types=1);

namespace Pathlock;

/** One page of list(): `next` is the cursor of the next page, '' on the last one. */
final readonly class ListPage
{
    /** @param list<LockInfo> $locks */
    public function __construct(public array $locks, public string $next)
    {
    }
}
