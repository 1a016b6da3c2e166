<?php

declare(strict_types=1);

namespace Pathlock\Exception;

/** A reentry was refused: its proof (id and token) names no live lock. */
final class NotHolderException extends LockRefusedException
{
    public function __construct()
    {
        parent::__construct('refused: the reentry proof names no live lock');
    }
}
