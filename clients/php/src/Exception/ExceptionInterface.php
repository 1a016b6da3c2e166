<?php

declare(strict_types=1);

namespace Pathlock\Exception;

/**
 * Marker of every exception this library throws (symfony/lock's shape):
 * `catch (\Pathlock\Exception\ExceptionInterface $e)` catches them all.
 */
interface ExceptionInterface extends \Throwable
{
}
