<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;

/** The little of RESP2 the wake-up subscription needs. */
final class Resp
{
    /** @param list<string> $words */
    public static function command(array $words): string
    {
        $out = '*' . count($words) . "\r\n";
        foreach ($words as $w) {
            $out .= '$' . strlen($w) . "\r\n" . $w . "\r\n";
        }
        return $out;
    }

    /**
     * One value from the start of $buffer: [value, bytes used], or null when
     * the buffer does not hold a whole value yet.
     *
     * @return array{0: mixed, 1: int}|null
     */
    public static function parse(string $buffer, int $at = 0): ?array
    {
        $eol = strpos($buffer, "\r\n", $at);
        if ($eol === false) {
            return null;
        }
        $type = $buffer[$at] ?? '';
        $line = substr($buffer, $at + 1, $eol - $at - 1);
        $next = $eol + 2;
        switch ($type) {
            case '+':
                return [$line, $next - $at];
            case '-':
                return [new RespError($line), $next - $at];
            case ':':
                return [(int) $line, $next - $at];
            case '$':
                $len = (int) $line;
                if ($len < 0) {
                    return [null, $next - $at];
                }
                if (strlen($buffer) < $next + $len + 2) {
                    return null;
                }
                return [substr($buffer, $next, $len), $next + $len + 2 - $at];
            case '*':
            case '>':
                $count = (int) $line;
                if ($count < 0) {
                    return [null, $next - $at];
                }
                $items = [];
                $pos = $next;
                for ($i = 0; $i < $count; $i++) {
                    $item = self::parse($buffer, $pos);
                    if ($item === null) {
                        return null;
                    }
                    $items[] = $item[0];
                    $pos += $item[1];
                }
                return [$items, $pos - $at];
            default:
                throw new BackendException("wake-up subscription: unexpected RESP type '$type'");
        }
    }
}
