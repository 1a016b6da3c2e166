<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;

/**
 * @internal The codec (as src/redis/replies.hpp and the contract are for
 * the C++ engine): a call's keys and arguments built by name from the
 * library's contract, and its replies read into the client's objects.
 *
 * Keys: the contract's pattern with each of its suffixes. Arguments: the
 * function's `args` in order, `path...` standing for the request's paths,
 * then every optional group, always (docs/lua-protocol.md#contract-read-only).
 * No name, position or suffix is spelled here but the values by name.
 */
final class Codec
{
    public function __construct(private readonly Contract $contract)
    {
    }

    /** @return list<string> the keys function $fn takes on $namespace (none for a function with `"keys": 0`) */
    public function keys(string $fn, string $namespace): array
    {
        return $this->contract->takesKeys($fn) ? $this->contract->keys($namespace) : [];
    }

    /**
     * The arguments of function $fn: each name of its contract entry's
     * arguments replaced by $values[name], and `path...` by $paths; then
     * each optional group in order, up to the first with a name $values
     * lacks (a group of a newer library, or one this call does not send).
     *
     * @param array<string,string> $values
     * @param list<string> $paths
     * @return list<string>
     */
    public function args(string $fn, array $values, array $paths = []): array
    {
        $out = [];
        foreach ($this->contract->requiredArguments($fn) as $name) {
            if ($name === 'path...') {
                array_push($out, ...$paths);
            } elseif (array_key_exists($name, $values)) {
                $out[] = $values[$name];
            } else {
                throw new BackendException("the library's $fn takes an argument '$name' this client does not know; use a client as new as the library");
            }
        }
        foreach ($this->contract->optionalGroups($fn) as $group) {
            if (array_diff($group, array_keys($values)) !== []) {
                break;
            }
            foreach ($group as $name) {
                $out[] = $values[$name];
            }
        }
        return $out;
    }

    /**
     * The arguments of one attempt of $r (of the library's acquire, or of
     * its convert, which takes them by the same names): its reserve_ms and
     * deadline_ms ('' for none) as given, every optional group sent.
     *
     * @return list<string>
     */
    public function acquireArgs(AcquireRequest $r, int $reserveMs, string $deadlineMs): array
    {
        return $this->args($r->function, [
            'owner' => $r->owner,
            'op' => $r->op,
            'ttl_ms' => (string) $r->ttlMs,
            'new_id' => $r->newId,
            'new_token' => $r->newToken,
            'reenter_id' => $r->reenter?->id ?? '',
            'reenter_token' => $r->reenter?->token ?? '',
            'idempotency_key' => $r->idempotencyKey,
            'fair' => $r->fair ? '1' : '0',
            'waiter_id' => $r->waiterId,
            'reserve_ms' => (string) $reserveMs,
            'deadline_ms' => $deadlineMs,
            'default_limits' => $r->defaultLimits,
        ], $r->paths);
    }

    /**
     * A function's reply, checked: an `invalid` reply is an
     * InvalidRequestException, `layout` (the namespace's stored layout is
     * another) and anything but an array with a status a BackendException.
     *
     * @return array<int,mixed>
     */
    public static function checked(string $fn, string $namespace, string $library, mixed $r): array
    {
        if (!is_array($r) || $r === [] || !is_string($r[0])) {
            throw new BackendException("redis: $fn: unexpected reply");
        }
        if ($r[0] === 'invalid') {
            throw new InvalidRequestException((string) ($r[1] ?? 'invalid request'));
        }
        if ($r[0] === 'layout') {
            throw new BackendException(sprintf(
                "namespace '%s' was written with data layout %s; this library (%s) uses layout %s",
                $namespace,
                (string) ($r[1] ?? '?'),
                $library,
                (string) ($r[2] ?? '?'),
            ));
        }
        return $r;
    }

    /** @param array<int,mixed> $r an acquire's (or a convert's: $fn) reply */
    public static function acquireResult(array $r, string $fn = AcquireRequest::ACQUIRE): AcquireResult
    {
        switch ($r[0]) {
            case 'granted':
                return AcquireResult::granted(new Grant((string) $r[1], (string) $r[2], (int) $r[3], (int) $r[4], (int) $r[5]));
            case 'refused':
                return AcquireResult::refused(self::conflict($r));
            case 'would_deadlock':   // convert only (protocol 4.5): refused's fields
                return AcquireResult::wouldDeadlock(self::conflict($r));
            case 'not_holder':
                return AcquireResult::notHolder();
            case 'over_limit':
                return AcquireResult::overLimit(LimitRefusal::fromReply($r));
        }
        throw new BackendException("$fn: unexpected reply '{$r[0]}'");
    }

    /** @param array<int,mixed> $r a `refused` (or `would_deadlock`) reply */
    private static function conflict(array $r): Conflict
    {
        return new Conflict(
            (string) $r[1],
            (string) $r[2],
            (string) $r[3],
            (string) $r[4],
            (string) $r[5],
            (int) $r[6],
            (string) $r[7],
            (string) $r[8],
            (string) $r[9],
            (int) $r[10] === 1,
        );
    }

    /** @param array<int,mixed> $r a list reply */
    public static function listPage(array $r): ListPage
    {
        $locks = [];
        foreach (array_slice($r, 2) as $row) {
            $locks[] = new LockInfo(
                (string) $row[0],
                (string) $row[1],
                (string) $row[2],
                (int) $row[3],
                (int) $row[4],
                (int) $row[5],
                self::pairs($row[6]),
            );
        }
        return new ListPage($locks, (string) ($r[1] ?? ''));
    }

    /** @param array<int,mixed> $r a blockers reply */
    public static function blockersPage(array $r): BlockersPage
    {
        $rows = [];
        foreach (array_slice($r, 2) as $b) {
            $rows[] = new Blocker(
                (int) $b[0] === 1,
                (string) $b[1],
                (string) $b[2],
                (string) $b[3],
                (string) $b[4],
                (string) $b[5],
                (string) $b[6],
                (string) $b[7],
                (string) $b[8],
                (int) $b[9],
                (int) $b[10],
                (int) $b[11],
                (int) $b[12],
            );
        }
        return new BlockersPage($rows, (int) ($r[1] ?? 0) === 1);
    }

    /**
     * @param array<int,mixed> $r a waiters reply (rows of 7 fields since protocol 4.5, `converts` last; 6 before)
     * @return list<WaiterInfo>
     */
    public static function waiters(array $r): array
    {
        $out = [];
        foreach (array_slice($r, 1) as $w) {
            $out[] = new WaiterInfo((string) $w[0], (string) $w[1], (string) $w[2], self::pairs($w[5]), (int) $w[3], (int) $w[4],
                (string) ($w[6] ?? ''));
        }
        return $out;
    }

    /** @return array<string,string> role => path from a flat [role, path, ...] reply */
    private static function pairs(mixed $flat): array
    {
        $out = [];
        $flat = is_array($flat) ? array_values($flat) : [];
        for ($i = 0; $i + 1 < count($flat); $i += 2) {
            $out[(string) $flat[$i]] = (string) $flat[$i + 1];
        }
        return $out;
    }
}
