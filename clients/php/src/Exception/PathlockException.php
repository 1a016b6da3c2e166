<?php

declare(strict_types=1);

namespace Pathlock\Exception;

/** Base class of every exception this library throws; see ExceptionInterface. */
abstract class PathlockException extends \RuntimeException implements ExceptionInterface
{
}
