<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;

/**
 * @internal Library loading (as src/redis/library.cpp's loading is for the
 * C++ engine): FUNCTION LOAD on every master, never replacing another text
 * of the same name, and the library's contract read (loading the library
 * first where it is missing).
 */
final class LibraryLoader
{
    public function __construct(
        private readonly Transport $transport,
        private readonly Library $library,
    ) {
    }

    /** LockEngine::loadLibrary(). */
    public function load(): void
    {
        if ($this->library->code === null) {
            throw new BackendException(
                "the server lacks the library {$this->library->name}, and this client was configured by its function prefix only (give the library file to load it)",
            );
        }
        $connection = $this->transport->connection;
        foreach ($connection->masters() as $master) {
            $on = $master === null ? '' : " on {$master[0]}:{$master[1]}";
            try {
                $r = $connection->command($master, 'FUNCTION', 'LOAD', $this->library->code);
            } catch (\RedisException $e) {
                throw new BackendException("redis: FUNCTION LOAD$on: " . $e->getMessage(), 0, $e);
            }
            if ($r === false) {
                $err = $connection->lastError();
                if (!str_contains($err, 'already exists')) {
                    throw new BackendException("redis: FUNCTION LOAD$on: $err");
                }
                $this->checkSameLibrary($master);
            }
        }
    }

    /**
     * The loaded library's contract (FCALL_RO <prefix>contract 0), loading
     * the library first where it is missing; a library without `contract`
     * (older than 4.2) is refused naming the protocol.
     */
    public function contract(): Contract
    {
        $fn = $this->library->functionPrefix . 'contract';
        for ($try = 0; ; $try++) {
            try {
                $r = $this->transport->connection->command(null, 'FCALL_RO', $fn, '0');
            } catch (\RedisException $e) {
                throw $this->transport->lostReply('contract', Transport::nowMs(), $e);
            }
            if (is_array($r) && ($r[0] ?? null) === 'contract') {
                return Contract::fromJson((string) $r[1]);
            }
            $err = $this->transport->connection->lastError();
            if (!str_starts_with($err, 'ERR Function not found')) {
                throw new BackendException("redis: contract: " . ($err !== '' ? $err : 'unexpected reply'));
            }
            if ($try > 0 || !$this->missing()) {
                throw new BackendException(
                    "the library {$this->library->name} has no function 'contract': it is older than protocol 4.2 "
                    . '(pathlock 1.0), which this client needs; load the library shipped with this package (Library::bundled())',
                );
            }
            $this->load();
        }
    }

    /**
     * A library of this name is loaded (on $master): it must be this very
     * text, else refused (never replaced).
     *
     * @param array{string,int}|null $master
     */
    private function checkSameLibrary(?array $master): void
    {
        $name = $this->library->name;
        $list = $this->transport->connection->command($master, 'FUNCTION', 'LIST', 'LIBRARYNAME', $name, 'WITHCODE');
        foreach (is_array($list) ? $list : [] as $entry) {
            $fields = is_array($entry) ? $entry : [];
            $at = array_search('library_name', $fields, true);
            $code = array_search('library_code', $fields, true);
            if ($at !== false && ($fields[$at + 1] ?? null) === $name && $code !== false
                && rtrim((string) $fields[$code + 1]) !== rtrim((string) $this->library->code)) {
                throw new BackendException("another library named $name is loaded (its code differs from the one given); not replaced");
            }
        }
    }

    /** Whether no library of this name is loaded. */
    private function missing(): bool
    {
        $list = $this->transport->connection->command(null, 'FUNCTION', 'LIST', 'LIBRARYNAME', $this->library->name);
        foreach (is_array($list) ? $list : [] as $entry) {
            $at = is_array($entry) ? array_search('library_name', $entry, true) : false;
            if ($at !== false && $entry[$at + 1] === $this->library->name) {
                return false;
            }
        }
        return true;
    }
}
