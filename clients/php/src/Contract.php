<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;

/**
 * What a library says about itself through its read-only function
 * `contract` (protocol 4.2, docs/lua-protocol.md#contract-read-only): the
 * protocol version, the matrix, the keys, the operations with their roles in
 * role order, the relations and the limits the functions enforce. The client
 * reads it once per engine (LockEngine::contract()) and never the library's
 * Lua text.
 */
final class Contract
{
    /**
     * @param array{name: string, version: string, fingerprint: string} $matrix
     * @param array<string, list<string>> $operations op => roles in role order
     * @param array<string, int> $limits
     * @param list<string> $keySuffixes
     * @param list<string> $relations
     */
    private function __construct(
        public readonly string $protocol,
        public readonly array $matrix,
        private readonly array $operations,
        public readonly array $limits,
        public readonly array $keySuffixes,
        public readonly array $relations,
        public readonly string $json,
    ) {
    }

    /** The JSON text the function `contract` answers. */
    public static function fromJson(string $json): self
    {
        try {
            $c = json_decode($json, true, 64, JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            throw new BackendException('the library\'s contract is not JSON: ' . $e->getMessage(), 0, $e);
        }
        if (!is_array($c) || !is_string($c['protocol'] ?? null) || !is_array($c['operations'] ?? null)
            || !is_array($c['limits'] ?? null) || !is_array($c['keys']['suffixes'] ?? null)) {
            throw new BackendException('the library\'s contract lacks protocol, operations, limits or keys');
        }
        $ops = [];
        foreach ($c['operations'] as $op) {
            $ops[(string) $op['name']] = array_map('strval', array_values($op['roles']));
        }
        $m = $c['matrix'] ?? [];
        return new self(
            $c['protocol'],
            ['name' => (string) ($m['name'] ?? ''), 'version' => (string) ($m['version'] ?? ''),
                'fingerprint' => (string) ($m['fingerprint'] ?? '')],
            $ops,
            array_map('intval', $c['limits']),
            array_map('strval', array_values($c['keys']['suffixes'])),
            array_map('strval', array_values($c['relations'] ?? [])),
            $json,
        );
    }

    /** @return list<string> the operation names, in the matrix's order */
    public function operations(): array
    {
        return array_keys($this->operations);
    }

    /** @return list<string>|null the roles of $op in role order, null for an unknown operation */
    public function roles(string $op): ?array
    {
        return $this->operations[$op] ?? null;
    }

    /** A limit by its contract name (`owner_bytes`, `ttl_ms`, `list_limit`, ...). */
    public function limit(string $name): int
    {
        if (!isset($this->limits[$name])) {
            throw new BackendException("the library's contract has no limit '$name'");
        }
        return $this->limits[$name];
    }

    /** Whether the protocol is $version (`major.minor`) or later. */
    public function atLeast(string $version): bool
    {
        return version_compare($this->protocol, $version, '>=');
    }
}
