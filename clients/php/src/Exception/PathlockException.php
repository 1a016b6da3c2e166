<?php

declare(strict_types=1);

namespace Pathlock\Exception;

/** Base of every exception this library throws. */
class PathlockException extends \RuntimeException
{
}
