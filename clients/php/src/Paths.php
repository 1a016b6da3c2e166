<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\InvalidRequestException;

/**
 * Canonical lock paths, exactly as the C++ engine's normalize_path makes
 * them (docs/design.md#paths): absolute, single `/` separators, no trailing
 * slash, no `.`/`..` component, no control characters, well-formed UTF-8,
 * components of at most 255 bytes, paths of at most 4096 bytes.
 */
final class Paths
{
    public const MAX_PATH_BYTES = 4096;
    public const MAX_COMPONENT_BYTES = 255;

    /** @throws InvalidRequestException */
    public static function normalize(string $path): string
    {
        if ($path === '') {
            throw new InvalidRequestException('path is empty');
        }
        if ($path[0] !== '/') {
            throw new InvalidRequestException("path '$path' is not absolute (must start with '/')");
        }
        self::checkLength($path, self::MAX_PATH_BYTES, 'path is %d bytes long; the limit is %d');
        $problem = self::textProblem($path);
        if ($problem !== null) {
            throw new InvalidRequestException("path has $problem");
        }
        $out = '';
        foreach (explode('/', $path) as $component) {
            if ($component === '') {
                continue;
            }
            if ($component === '.' || $component === '..') {
                throw new InvalidRequestException("path '$path' has a '$component' component; give the resolved path");
            }
            self::checkLength($component, self::MAX_COMPONENT_BYTES, 'path component of %d bytes; the limit is %d');
            $out .= '/' . $component;
        }
        return $out === '' ? '/' : $out;
    }

    /**
     * $text longer than $max bytes is refused; $format names its length, then the limit.
     *
     * @throws InvalidRequestException
     */
    private static function checkLength(string $text, int $max, string $format): void
    {
        if (strlen($text) > $max) {
            throw new InvalidRequestException(sprintf($format, strlen($text), $max));
        }
    }

    /** A control character or malformed UTF-8 in $text, described, or null. */
    public static function textProblem(string $text): ?string
    {
        if (preg_match('/[\x00-\x1F\x7F]/', $text, $m, PREG_OFFSET_CAPTURE) === 1) {
            return sprintf('control character 0x%02X at byte %d', ord($m[0][0]), $m[0][1]);
        }
        // PCRE's UTF-8 check refuses overlong forms, surrogates, code points
        // above U+10FFFF and truncated sequences, as the C++ check does.
        if (preg_match('//u', $text) !== 1) {
            return 'invalid UTF-8 at byte ' . self::firstInvalidUtf8($text);
        }
        return null;
    }

    /** Whether $inner is $outer or lies inside it (both canonical). */
    public static function within(string $inner, string $outer): bool
    {
        if ($outer === '/') {
            return true;
        }
        if (!str_starts_with($inner, $outer)) {
            return false;
        }
        return strlen($inner) === strlen($outer) || $inner[strlen($outer)] === '/';
    }

    public static function overlap(string $a, string $b): bool
    {
        return self::within($a, $b) || self::within($b, $a);
    }

    private static function firstInvalidUtf8(string $text): int
    {
        // The length of the longest well-formed prefix (RFC 3629 byte ranges).
        preg_match(
            '/^(?:[\x00-\x7F]|[\xC2-\xDF][\x80-\xBF]|\xE0[\xA0-\xBF][\x80-\xBF]|[\xE1-\xEC\xEE\xEF][\x80-\xBF]{2}'
            . '|\xED[\x80-\x9F][\x80-\xBF]|\xF0[\x90-\xBF][\x80-\xBF]{2}|[\xF1-\xF3][\x80-\xBF]{3}|\xF4[\x80-\x8F][\x80-\xBF]{2})*/s',
            $text,
            $m,
        );
        return strlen($m[0]);
    }
}
