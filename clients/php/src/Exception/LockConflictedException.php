<?php

declare(strict_types=1);

namespace Pathlock\Exception;

use Pathlock\Conflict;

/** The request was refused: `conflict` names the lock or older waiter that refused it. */
final class LockConflictedException extends LockRefusedException
{
    public function __construct(public readonly Conflict $conflict)
    {
        parent::__construct(sprintf(
            'refused: %s %s %s by %s \'%s\' on %s (%s%s)',
            $conflict->requestedRole,
            $conflict->requestedPath,
            $conflict->queued ? 'is awaited' : 'is locked',
            $conflict->op,
            $conflict->owner,
            $conflict->path,
            $conflict->relation,
            $conflict->queued ? ', queued' : '',
        ));
    }
}
