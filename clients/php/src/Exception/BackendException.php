<?php

declare(strict_types=1);

namespace Pathlock\Exception;

/**
 * Redis could not be reached, answered an error (NOPERM, OOM, BUSY, ...),
 * or a reply was lost. A call whose reply was lost may have run: it is
 * never sent again by this library.
 */
class BackendException extends PathlockException
{
}
