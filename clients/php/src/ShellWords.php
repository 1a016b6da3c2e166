<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\InvalidRequestException;

/**
 * @internal The words and numbers of the shell's lines (docs/cli.md
 * "Quoting"): splitting a line, option words given once, whole numbers of
 * milliseconds, page limits.
 */
final class ShellWords
{
    /** The options `acquire` and `convert` share (requestOption()), as they are when not given. */
    public const REQUEST_OPTIONS = ['ttl' => LockEngine::DEFAULT_TTL_MS, 'wait' => 0, 'fair' => true, 'key' => null];

    /**
     * Splits a line into words (docs/cli.md "Quoting").
     *
     * @return array{0: list<string>, 1: list<bool>} the words and whether each was quoted
     */
    public static function splitWords(string $line): array
    {
        $words = [];
        $quoted = [];
        $n = strlen($line);
        $i = 0;
        while (true) {
            while ($i < $n && ($line[$i] === ' ' || $line[$i] === "\t")) {
                $i++;
            }
            if ($i === $n) {
                break;
            }
            $word = '';
            if ($line[$i] === '"') {
                $i++;
                $closed = false;
                while ($i < $n) {
                    $c = $line[$i++];
                    if ($c === '"') {
                        $closed = true;
                        break;
                    }
                    if ($c === '\\') {
                        if ($i === $n || ($line[$i] !== '"' && $line[$i] !== '\\')) {
                            throw new InvalidRequestException('in a quoted word, a backslash must be followed by " or \\');
                        }
                        $word .= $line[$i++];
                    } else {
                        $word .= $c;
                    }
                }
                if (!$closed) {
                    throw new InvalidRequestException('unterminated quote');
                }
                if ($i < $n && $line[$i] !== ' ' && $line[$i] !== "\t") {
                    throw new InvalidRequestException('a closing quote must end the word');
                }
                $quoted[] = true;
            } else {
                while ($i < $n && $line[$i] !== ' ' && $line[$i] !== "\t") {
                    $word .= $line[$i++];
                }
                $quoted[] = false;
            }
            $words[] = $word;
        }
        return [$words, $quoted];
    }

    public static function isCancelLine(string $line): bool
    {
        if (str_contains($line, "\r")) {
            return false;
        }
        try {
            [$w, $q] = self::splitWords($line);
        } catch (InvalidRequestException) {
            return false;
        }
        return $w === ['cancel'] && $q === [false];
    }

    public static function arity(array $w, int $lo, int $hi, string $usage): void
    {
        if (count($w) < $lo || count($w) > $hi) {
            throw new InvalidRequestException("usage: $usage");
        }
    }

    public static function ms(string $word, int $skip): int
    {
        $v = substr($word, $skip);
        if (preg_match('/\A-?[0-9]{1,18}\z/', $v) !== 1) {
            throw new InvalidRequestException("'$word' needs a whole number of milliseconds");
        }
        return (int) $v;
    }

    /** limit=N (at most once: $current is null the first time) from 1 to $max. */
    public static function limit(?int $current, string $word, int $max): int
    {
        if ($current !== null) {
            throw new InvalidRequestException('limit= is given twice');
        }
        $v = substr($word, 6);
        if (preg_match('/\A[0-9]{1,18}\z/', $v) !== 1 || (int) $v < 1 || (int) $v > $max) {
            throw new InvalidRequestException("'$word' needs a whole number from 1 to $max");
        }
        return (int) $v;
    }

    /**
     * Option word $word (its name the first $skip bytes), recorded in $given;
     * an error when it was given before: each option once (docs/cli.md).
     *
     * @param array<string,true> $given
     */
    public static function firstTime(array &$given, string $word, int $skip): string
    {
        $name = substr($word, 0, $skip);
        if (isset($given[$name])) {
            throw new InvalidRequestException("$name is given twice");
        }
        $given[$name] = true;
        return $word;
    }

    /**
     * Word $i when it is one of the options acquire and convert share
     * (ttl=MS, wait=MS, fair=true|false, key=KEY; unquoted, each once), into
     * $o; false when it is none of them.
     *
     * @param array{ttl: int, wait: int, fair: bool, key: ?string} $o REQUEST_OPTIONS at first
     * @param array<string,true> $given
     * @param list<string> $w
     * @param list<bool> $q whether each word was quoted
     */
    public static function requestOption(array &$o, array &$given, array $w, array $q, int $i): bool
    {
        $word = $w[$i];
        if ($q[$i]) {
            return false;
        }
        if (str_starts_with($word, 'ttl=')) {
            $o['ttl'] = self::ms(self::firstTime($given, $word, 4), 4);
        } elseif (str_starts_with($word, 'wait=')) {
            $o['wait'] = self::ms(self::firstTime($given, $word, 5), 5);
        } elseif ($word === 'fair=true' || $word === 'fair=false') {
            $o['fair'] = self::firstTime($given, $word, 5) === 'fair=true';
        } elseif (str_starts_with($word, 'fair=')) {
            throw new InvalidRequestException('fair= takes true or false');
        } elseif (str_starts_with($word, 'key=')) {
            $o['key'] = self::once($o['key'], $word, 4);
        } else {
            return false;
        }
        return true;
    }

    /** An operation of $contract given $n paths, one per role (the paths of acquire, convert and blockers). */
    public static function checkPaths(Contract $contract, string $op, int $n): void
    {
        $roles = $contract->roles($op);
        if ($roles === null) {
            throw new InvalidRequestException("unknown operation '$op'");
        }
        if ($n !== count($roles)) {
            throw new InvalidRequestException(sprintf("operation '%s' takes %d path(s), got %d", $op, count($roles), $n));
        }
    }

    public static function once(?string $current, string $word, int $skip): string
    {
        $name = substr($word, 0, $skip);
        if ($current !== null) {
            throw new InvalidRequestException("$name is given twice");
        }
        if (strlen($word) === $skip) {
            throw new InvalidRequestException("$name needs a value");
        }
        return substr($word, $skip);
    }
}
