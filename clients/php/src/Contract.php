<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;

/**
 * What a library says about itself through its read-only function
 * `contract` (protocol 4.2, docs/lua-protocol.md#contract-read-only): the
 * protocol version, the matrix, the keys, the operations with their roles in
 * role order, the relations, the limits the functions enforce, each
 * function's arguments by name and (protocol 4.4) the waiting numbers. The
 * client reads it once per engine (LockEngine::contract()) and never the
 * library's Lua text: the keys of a call, its arguments' order and the
 * waiting numbers all come from here.
 */
final class Contract
{
    /**
     * @param array{name: string, version: string, fingerprint: string} $matrix
     * @param array<string, list<string>> $operations op => roles in role order
     * @param array<string, int> $limits
     * @param list<string> $keySuffixes
     * @param list<string> $relations
     * @param array<string, array{keys: int, args: list<string>}> $functions name => its keys and every argument
     *   in order (args, then each optional group)
     * @param array<string, int>|null $waiting `waiting` (protocol 4.4: recheck_ms, max_reservation_ms,
     *   wake_margin_ms); null for an older library
     */
    private function __construct(
        public readonly string $protocol,
        public readonly array $matrix,
        private readonly array $operations,
        public readonly array $limits,
        public readonly array $keySuffixes,
        public readonly array $relations,
        public readonly string $json,
        public readonly string $keyPattern = 'pl:{NS}:<suffix>',
        private readonly array $functions = [],
        public readonly ?array $waiting = null,
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
            (string) ($c['keys']['pattern'] ?? 'pl:{NS}:<suffix>'),
            self::functionsOf($c['functions'] ?? []),
            is_array($c['waiting'] ?? null) ? array_map('intval', $c['waiting']) : null,
        );
    }

    /**
     * @param mixed $list the contract's `functions`
     * @return array<string, array{keys: int, args: list<string>, optional: list<list<string>>}>
     */
    private static function functionsOf(mixed $list): array
    {
        $out = [];
        foreach (is_array($list) ? $list : [] as $f) {
            if (!is_array($f) || !is_string($f['name'] ?? null)) {
                continue;
            }
            $args = array_map('strval', array_values($f['args'] ?? []));
            $groups = [];
            foreach (is_array($f['optional'] ?? null) ? $f['optional'] : [] as $group) {
                $groups[] = array_map('strval', array_values((array) $group));
            }
            $out[$f['name']] = ['keys' => (int) ($f['keys'] ?? 0), 'args' => $args, 'optional' => $groups];
        }
        return $out;
    }

    /**
     * The keys of a call on $namespace: the pattern with `NS` and `<suffix>`
     * replaced, for each suffix in order (docs/lua-protocol.md#keys).
     *
     * @return list<string>
     */
    public function keys(string $namespace): array
    {
        $pattern = str_replace('{NS}', '{' . $namespace . '}', $this->keyPattern);
        return array_map(fn(string $s): string => str_replace('<suffix>', $s, $pattern), $this->keySuffixes);
    }

    /**
     * Every argument name of function $name in order: its `args` (`path...`
     * standing for one path per role), then each of its `optional` groups.
     *
     * @return list<string>
     */
    public function arguments(string $name): array
    {
        $e = $this->entry($name);
        return array_merge($e['args'], ...$e['optional']);
    }

    /**
     * Function $name's `args` (`path...` standing for one path per role),
     * without its optional groups.
     *
     * @return list<string>
     */
    public function requiredArguments(string $name): array
    {
        return $this->entry($name)['args'];
    }

    /**
     * Function $name's `optional` groups, in order.
     *
     * @return list<list<string>>
     */
    public function optionalGroups(string $name): array
    {
        return $this->entry($name)['optional'];
    }

    /** Whether function $name takes the namespace's keys (its entry's `keys` is not 0). */
    public function takesKeys(string $name): bool
    {
        return $this->entry($name)['keys'] !== 0;
    }

    /** @return array{keys: int, args: list<string>, optional: list<list<string>>} */
    private function entry(string $name): array
    {
        if (!isset($this->functions[$name])) {
            throw new BackendException("the library's contract has no function '$name'");
        }
        return $this->functions[$name];
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
