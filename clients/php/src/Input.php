<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\InvalidRequestException;

/**
 * @internal The input checks of LockEngine, before Redis is called (as
 * src/core/validate.cpp does for the C++ engine): namespaces, owners, ids,
 * tokens, keys, numbers and targets, with the limits the library's contract
 * names. Bad input throws InvalidRequestException; nothing was sent.
 */
final class Input
{
    public function __construct(private readonly Contract $contract)
    {
    }

    public static function checkNamespace(string $ns): void
    {
        if ($ns === '') {
            throw new InvalidRequestException('namespace is empty');
        }
        if (strlen($ns) > 128) {
            throw new InvalidRequestException(sprintf('namespace is %d bytes; the limit is 128', strlen($ns)));
        }
        if (preg_match('/\A[A-Za-z0-9._:-]+\z/', $ns) !== 1) {
            throw new InvalidRequestException("namespace '$ns' has a character outside [A-Za-z0-9._:-]");
        }
    }

    /** acquire()'s input checks (the targets are resolveTargets()'s). */
    public function checkAcquire(string $namespace, string $owner, int $ttlMs, int $waitMs, ?Grant $reenter, ?string $idempotencyKey): void
    {
        self::checkNamespace($namespace);
        $this->checkOwner($owner);
        $this->checkTtl($ttlMs);
        $this->checkWait($waitMs);
        if ($reenter !== null) {
            $this->checkId($reenter->id, 'reenter_id');
            $this->checkToken($reenter->token, 'reenter_token');
            if ($idempotencyKey !== null && $idempotencyKey !== '') {
                throw new InvalidRequestException('a reentry (reenter_id) takes no idempotency_key: the lock it proves is already known');
            }
        }
        if ($idempotencyKey !== null) {
            $this->checkIdempotencyKey($idempotencyKey);
        }
    }

    /**
     * convert()'s input checks (the targets are resolveTargets()'s): $lock's
     * id and token must be able to be a lock's, as a reentry's proof.
     */
    public function checkConvert(string $namespace, Grant $lock, int $ttlMs, int $waitMs, ?string $idempotencyKey): void
    {
        self::checkNamespace($namespace);
        $this->checkTtl($ttlMs);
        $this->checkWait($waitMs);
        $this->checkId($lock->id, "the converted lock's id");
        $this->checkToken($lock->token, "the converted lock's token");
        if ($idempotencyKey !== null) {
            $this->checkIdempotencyKey($idempotencyKey);
        }
    }

    /** A wait: 0 (answer at once) up to the contract's `ttl_ms`. */
    private function checkWait(int $waitMs): void
    {
        $maxTtl = $this->contract->limit('ttl_ms');
        if ($waitMs < 0 || $waitMs > $maxTtl) {
            throw new InvalidRequestException(sprintf('wait %d ms is outside 0..%d ms', $waitMs, $maxTtl));
        }
    }

    /** A lease: 1 ms up to the contract's `ttl_ms`. */
    public function checkTtl(int $ttlMs): void
    {
        $maxTtl = $this->contract->limit('ttl_ms');
        if ($ttlMs < 1 || $ttlMs > $maxTtl) {
            throw new InvalidRequestException(sprintf('ttl %d ms is outside 1..%d ms', $ttlMs, $maxTtl));
        }
    }

    public function checkOwner(string $owner): void
    {
        if ($owner === '') {
            throw new InvalidRequestException('owner is empty');
        }
        $max = $this->contract->limit('owner_bytes');
        if (strlen($owner) > $max) {
            throw new InvalidRequestException(sprintf('owner is %d bytes; the limit is %d', strlen($owner), $max));
        }
        $problem = Paths::textProblem($owner);
        if ($problem !== null) {
            throw new InvalidRequestException("owner has $problem");
        }
    }

    /**
     * Could this be a lock's id (the engine's rule: 1..id_chars of [A-Za-z0-9-])?
     * A proof that could not be a lock's names no lock: release, renew, isHeld
     * and forceRelease answer false for it without asking the server, as every
     * client does; a reentry refuses it (checkId).
     */
    public function isLockId(string $id): bool
    {
        return preg_match('/\A[A-Za-z0-9-]+\z/', $id) === 1 && strlen($id) <= $this->contract->limit('id_chars');
    }

    /** Could this be a lock's token (1..token_bytes bytes)? */
    public function isLockToken(string $token): bool
    {
        return $token !== '' && strlen($token) <= $this->contract->limit('token_bytes');
    }

    public function checkId(string $id, string $what): void
    {
        if (!$this->isLockId($id)) {
            $max = $this->contract->limit('id_chars');
            throw new InvalidRequestException("$what must be 1..$max characters of [A-Za-z0-9-]");
        }
    }

    public function checkToken(string $token, string $what): void
    {
        if (!$this->isLockToken($token)) {
            $max = $this->contract->limit('token_bytes');
            throw new InvalidRequestException("$what must be 1..$max bytes");
        }
    }

    public function checkIdempotencyKey(string $key): void
    {
        $max = $this->contract->limit('idempotency_key_chars');
        if (preg_match('/\A[A-Za-z0-9._:-]+\z/', $key) !== 1 || strlen($key) > $max) {
            throw new InvalidRequestException("idempotency_key must be 1..$max characters of [A-Za-z0-9._:-]");
        }
    }

    /** A page size: 1 up to the contract's limit $name. */
    public function checkLimit(int $limit, string $name): void
    {
        $max = $this->contract->limit($name);
        if ($limit < 1 || $limit > $max) {
            throw new InvalidRequestException(sprintf('limit %d is outside 1..%d', $limit, $max));
        }
    }

    /** A list cursor: '' (the first page) or the `next` of a page. */
    public static function checkCursor(string $after): void
    {
        if ($after !== '' && preg_match('/\A[0-9]{1,16}\z/', $after) !== 1) {
            throw new InvalidRequestException("cursor '$after' is not a cursor of this namespace (the \"next\" of a page)");
        }
    }

    /**
     * The canonical paths of $targets in the matrix's role order.
     *
     * @param array<string,string>|list<string> $targets
     * @return list<string>
     */
    public function resolveTargets(string $op, array $targets): array
    {
        $roles = $this->contract->roles($op);
        if ($roles === null) {
            throw new InvalidRequestException("unknown operation '$op'");
        }
        if (count($targets) !== count($roles)) {
            throw new InvalidRequestException(sprintf(
                "operation '%s' takes %d target(s) (%s), got %d",
                $op,
                count($roles),
                implode(', ', $roles),
                count($targets),
            ));
        }
        if ($targets === []) {
            throw new InvalidRequestException("operation '$op' needs at least one target");
        }
        $paths = [];
        foreach (self::orderTargets($op, $targets, $roles) as [$role, $path]) {
            if (!is_string($path)) {
                throw new InvalidRequestException("$role path must be a string");
            }
            try {
                $paths[] = Paths::normalize($path);
            } catch (InvalidRequestException $e) {
                throw new InvalidRequestException("$role path: " . $e->getMessage(), 0, $e);
            }
        }
        return $paths;
    }

    /**
     * [role, path] pairs in role order, from a list (role order already) or a role => path map.
     *
     * @param array<string,string>|list<string> $targets
     * @param list<string> $roles
     * @return list<array{string, mixed}>
     */
    private static function orderTargets(string $op, array $targets, array $roles): array
    {
        $ordered = [];
        if (array_is_list($targets)) {
            foreach ($targets as $i => $path) {
                $ordered[] = [$roles[$i] ?? "#$i", $path];
            }
            return $ordered;
        }
        foreach ($roles as $role) {
            if (!array_key_exists($role, $targets)) {
                $unknown = array_diff(array_keys($targets), $roles);
                throw new InvalidRequestException($unknown !== []
                    ? sprintf("operation '%s' has no role '%s'", $op, (string) reset($unknown))
                    : sprintf("operation '%s' needs a '%s' target", $op, $role));
            }
            $ordered[] = [$role, $targets[$role]];
        }
        return $ordered;
    }

    public static function resolvePrefix(string $prefix): string
    {
        try {
            return Paths::normalize($prefix);
        } catch (InvalidRequestException $e) {
            throw new InvalidRequestException('prefix: ' . $e->getMessage(), 0, $e);
        }
    }

    /**
     * The library's "OP: A may not be B or inside it" as the C++ engine says
     * it, with the paths ("OP: A '/x/y' is inside B '/x'"); other messages as they are.
     *
     * @param list<string> $paths the request's paths in role order
     */
    public function withPaths(InvalidRequestException $e, string $op, array $paths): InvalidRequestException
    {
        $roles = $this->contract->roles($op) ?? [];
        if (preg_match('/\A\S+: (\S+) may not be (\S+) or inside it\z/', $e->getMessage(), $m) !== 1) {
            return $e;
        }
        $i = array_search($m[1], $roles, true);
        $j = array_search($m[2], $roles, true);
        if ($i === false || $j === false || !isset($paths[$i], $paths[$j])) {
            return $e;
        }
        $how = $paths[$i] === $paths[$j] ? 'the same as' : 'inside';
        return new InvalidRequestException(sprintf("%s: %s '%s' is %s %s '%s'", $op, $m[1], $paths[$i], $how, $m[2], $paths[$j]), 0, $e);
    }
}
