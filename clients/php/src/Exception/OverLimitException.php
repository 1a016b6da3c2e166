<?php

declare(strict_types=1);

namespace Pathlock\Exception;

use Pathlock\LimitRefusal;

/**
 * The request was refused by a limit of its namespace (or of the owner in
 * it): `refusal` names the limit, its value and the count. Nothing was
 * taken; a waiting request gets it at once.
 */
final class OverLimitException extends LockRefusedException
{
    public function __construct(public readonly LimitRefusal $refusal)
    {
        parent::__construct(sprintf('refused: over the limit on %s (%d of at most %d)', $refusal->limit, $refusal->count, $refusal->max));
    }
}
