<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\InvalidRequestException;

/**
 * The pathlock Functions library a client calls (docs/lua-protocol.md "The
 * library"): its name `pathlock_v4_<H>`, its function prefix `pl_v4_<H>_`
 * and, when built from the library file, its text (to load it on a server
 * that lacks it). What the library offers (operations, roles, limits) is
 * not read from the text: LockEngine::contract() asks the loaded library.
 */
final class Library
{
    private function __construct(
        public readonly string $name,
        public readonly string $functionPrefix,
        public readonly ?string $code,
    ) {
    }

    /**
     * The default matrix's library shipped inside this package
     * (`library/pathlock_library.lua` beside `src/`).
     */
    public static function bundled(): self
    {
        return self::fromFile(self::bundledFile());
    }

    /** Where the shipped library file is. */
    public static function bundledFile(): string
    {
        return dirname(__DIR__) . '/library/pathlock_library.lua';
    }

    /** A library file (the shipped one, or a `.lua` of your own matrix from `pathlock-matrixc`). */
    public static function fromFile(string $file): self
    {
        $code = @file_get_contents($file);
        if ($code === false) {
            throw new InvalidRequestException("cannot read the library file '$file'");
        }
        return self::fromCode($code, $file);
    }

    /** A library text: only its first line (`#!lua name=...`, Redis's own header) is read. */
    public static function fromCode(string $code, string $what = 'library text'): self
    {
        if (preg_match('/\A#!lua name=(pathlock_(v\d+_[0-9a-f]{16}))\n/', $code, $m) !== 1) {
            throw new InvalidRequestException("$what: the first line is not '#!lua name=pathlock_v<N>_<hash>'");
        }
        return new self($m[1], 'pl_' . $m[2] . '_', $code);
    }

    /**
     * A library already loaded on the servers, by its function prefix
     * (`pl_v4_<H>_`). Without the text it cannot be loaded where it is
     * missing.
     */
    public static function fromPrefix(string $functionPrefix): self
    {
        if (preg_match('/\Apl_(v\d+_[0-9a-f]{16})_\z/', $functionPrefix, $m) !== 1) {
            throw new InvalidRequestException("function prefix '$functionPrefix' is not pl_v<N>_<16 hex digits>_");
        }
        return new self('pathlock_' . $m[1], $functionPrefix, null);
    }

    /**
     * @internal The contract this library's text embeds (its data chunk's
     * `PL_CONTRACT`, what its function `contract` answers), for
     * LockEngine::keys() without a contract alone: an engine asks the
     * loaded library (LockEngine::contract()).
     */
    public function embeddedContract(): string
    {
        if ($this->code === null || preg_match('/^local PL_CONTRACT = "((?:[^"\\\\]|\\\\.)*)"$/m', $this->code, $m) !== 1) {
            throw new InvalidRequestException("the library {$this->name}: no text with a contract (PL_CONTRACT) to read");
        }
        return (string) preg_replace_callback(
            '/\\\\([0-9]{3}|.)/s',
            static fn(array $e): string => ctype_digit($e[1]) ? chr((int) $e[1]) : $e[1],
            $m[1],
        );
    }
}
