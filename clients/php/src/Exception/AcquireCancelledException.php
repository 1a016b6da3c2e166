<?php

declare(strict_types=1);

namespace Pathlock\Exception;

/** A Cancellation stopped the wait; the request left the line and holds nothing. */
final class AcquireCancelledException extends LockRefusedException
{
    public function __construct()
    {
        parent::__construct('cancelled while waiting');
    }
}
