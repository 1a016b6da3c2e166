<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * The tests' one wait for a state another process or thread reaches: a
 * sync point on what the test can observe, never a fixed sleep.
 */
final class Wait
{
    /** The one default limit, in seconds: a bound against hanging, not a measure of speed. */
    public const LIMIT_S = 20.0;

    /**
     * Polls $condition until it returns neither false nor null, and returns
     * that; past $limitS seconds a RuntimeException naming $what.
     *
     * @template T
     * @param callable(): (T|false|null) $condition
     * @return T
     */
    public static function until(callable $condition, string $what, float $limitS = self::LIMIT_S): mixed
    {
        $deadline = microtime(true) + $limitS;
        for (;;) {
            $value = $condition();
            if ($value !== false && $value !== null) {
                return $value;
            }
            if (microtime(true) > $deadline) {
                throw new \RuntimeException("not within $limitS s: $what");
            }
            usleep(5000);
        }
    }
}
