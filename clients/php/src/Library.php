<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\InvalidRequestException;

/**
 * The pathlock Functions library a client calls (docs/lua-protocol.md "The
 * library"): its name `pathlock_v4_<H>`, its function prefix
 * `pl_v4_<H>_`, and, when built from the library file, its text (to load it
 * on a server that lacks it) and the matrix's operations with their roles in
 * role order (read from the file's data chunk).
 */
final class Library
{
    /**
     * @param array<string, array{roles: list<string>, notInside: list<array{int,int}>}> $operations
     */
    private function __construct(
        public readonly string $name,
        public readonly string $functionPrefix,
        public readonly ?string $code,
        private readonly array $operations,
        public readonly string $matrixName,
        public readonly string $matrixVersion,
    ) {
    }

    /** The library file a pathlock build writes (never edited). */
    public static function fromFile(string $file): self
    {
        $code = @file_get_contents($file);
        if ($code === false) {
            throw new InvalidRequestException("cannot read the library file '$file'");
        }
        return self::fromCode($code, $file);
    }

    public static function fromCode(string $code, string $what = 'library text'): self
    {
        if (preg_match('/\A#!lua name=(pathlock_(v\d+_[0-9a-f]{16}))\n/', $code, $m) !== 1) {
            throw new InvalidRequestException("$what: the first line is not '#!lua name=pathlock_v<N>_<hash>'");
        }
        $name = $m[1];
        $prefix = 'pl_' . $m[2] . '_';
        if (!str_contains($code, 'local PL_FUNCTION_PREFIX = "' . $prefix . '"')) {
            throw new InvalidRequestException("$what: its function prefix is not $prefix");
        }
        $operations = [];
        if (preg_match('/^local PL_OPS = \{\n(.*?)^\}/ms', $code, $block) === 1) {
            $str = '"((?:[^"\\\\]|\\\\.)*)"';
            preg_match_all(
                '/^\s*\[' . $str . '\] = \{ first = (\d+), roles = \{ ([^}]*) \}, not_inside = \{\s*((?:\{ \d+, \d+ \},?\s*)*)\} \},$/m',
                $block[1],
                $ops,
                PREG_SET_ORDER,
            );
            foreach ($ops as $op) {
                preg_match_all('/' . $str . '/', $op[3], $roles);
                preg_match_all('/\{ (\d+), (\d+) \}/', $op[4], $inside, PREG_SET_ORDER);
                $operations[self::luaString($op[1])] = [
                    'roles' => array_map(self::luaString(...), $roles[1]),
                    'notInside' => array_map(fn(array $p): array => [(int) $p[1] - 1, (int) $p[2] - 1], $inside),
                ];
            }
        }
        if ($operations === []) {
            throw new InvalidRequestException("$what: no operations found in its data chunk (PL_OPS)");
        }
        $matrix = preg_match('/^local PL_MATRIX_NAME = "((?:[^"\\\\]|\\\\.)*)"$/m', $code, $mn) === 1
            ? self::luaString($mn[1]) : '';
        $version = preg_match('/^local PL_MATRIX_VERSION = "((?:[^"\\\\]|\\\\.)*)"$/m', $code, $mv) === 1
            ? self::luaString($mv[1]) : '';
        return new self($name, $prefix, $code, $operations, $matrix, $version);
    }

    /**
     * A library already loaded on the servers, by its function prefix
     * (`pl_v4_<H>_`). Without the text it cannot be loaded where it is
     * missing, and without the operations targets must be given as a list of
     * paths in the matrix's role order.
     *
     * @param array<string, list<string>> $operations op => roles in role order, when known
     */
    public static function fromPrefix(string $functionPrefix, array $operations = []): self
    {
        if (preg_match('/\Apl_(v\d+_[0-9a-f]{16})_\z/', $functionPrefix, $m) !== 1) {
            throw new InvalidRequestException("function prefix '$functionPrefix' is not pl_v<N>_<16 hex digits>_");
        }
        $ops = [];
        foreach ($operations as $op => $roles) {
            $ops[$op] = ['roles' => array_values($roles), 'notInside' => []];
        }
        return new self('pathlock_' . $m[1], $functionPrefix, null, $ops, '', '');
    }

    /** Whether the operations of the matrix are known (from the file or given). */
    public function knowsOperations(): bool
    {
        return $this->operations !== [];
    }

    /** @return list<string> the operation names, in the matrix's order */
    public function operations(): array
    {
        return array_keys($this->operations);
    }

    /** @return list<string>|null the roles of $op in role order, null if unknown */
    public function roles(string $op): ?array
    {
        return $this->operations[$op]['roles'] ?? null;
    }

    /** @return list<array{int,int}> pairs [inner, outer] of role indexes: inner may not be outer or inside it */
    public function notInside(string $op): array
    {
        return $this->operations[$op]['notInside'] ?? [];
    }

    private static function luaString(string $escaped): string
    {
        return preg_replace_callback(
            '/\\\\(\d{3}|.)/s',
            fn(array $m): string => strlen($m[1]) === 3 ? chr((int) $m[1]) : $m[1],
            $escaped,
        );
    }
}
