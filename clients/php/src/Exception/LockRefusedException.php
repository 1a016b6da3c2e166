<?php

declare(strict_types=1);

namespace Pathlock\Exception;

use Pathlock\Conflict;

/**
 * Thrown by LockEngine::lock() when the request was refused (after waiting,
 * when it waited). `conflict` names the lock or older waiter that refused
 * it; it is null when a reentry's proof named no live lock (`notHolder`).
 */
final class LockRefusedException extends PathlockException
{
    public function __construct(
        public readonly ?Conflict $conflict,
        public readonly bool $notHolder = false,
        public readonly bool $cancelled = false,
    ) {
        if ($conflict !== null) {
            $what = sprintf(
                'refused: %s %s %s by %s \'%s\' on %s (%s%s)',
                $conflict->requestedRole,
                $conflict->requestedPath,
                $conflict->queued ? 'is awaited' : 'is locked',
                $conflict->op,
                $conflict->owner,
                $conflict->path,
                $conflict->relation,
                $conflict->queued ? ', queued' : '',
            );
        } elseif ($notHolder) {
            $what = 'refused: the reentry proof names no live lock';
        } else {
            $what = 'cancelled while waiting';
        }
        parent::__construct($what);
    }
}
