<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;
use Pathlock\Exception\LockRefusedException;

/**
 * The calls of a pathlock engine (docs/php.md), implemented by LockEngine:
 * type against it to decorate the engine (metrics, logging) or to give a
 * test double to code that only takes locks. Every method throws
 * InvalidRequestException for bad input (nothing changed) and
 * BackendException when Redis failed; all extend ExceptionInterface.
 */
interface LockEngineInterface
{
    /**
     * Takes every target of one request, or none; a refusal is a result.
     *
     * @param array<string,string>|list<string> $targets role => path, or the paths in role order
     * @throws InvalidRequestException|BackendException
     */
    public function acquire(
        string $namespace,
        string $owner,
        string $op,
        array $targets,
        int $ttlMs = LockEngine::DEFAULT_TTL_MS,
        int $waitMs = 0,
        bool $fair = true,
        ?Grant $reenter = null,
        ?string $idempotencyKey = null,
        ?Cancellation $cancellation = null,
    ): AcquireResult;

    /**
     * acquire() as a guard; no lock is a LockRefusedException (its subclass says why).
     *
     * @param array<string,string>|list<string> $targets
     * @throws LockRefusedException|InvalidRequestException|BackendException
     */
    public function lock(
        string $namespace,
        string $owner,
        string $op,
        array $targets,
        int $ttlMs = LockEngine::DEFAULT_TTL_MS,
        int $waitMs = 0,
        bool $fair = true,
        ?Grant $reenter = null,
        ?string $idempotencyKey = null,
        ?Cancellation $cancellation = null,
    ): LockGuard;

    /**
     * Runs $work(Grant) under the lock (lock()'s options), released afterwards whatever happens.
     *
     * @template T
     * @param array<string,string>|list<string> $targets
     * @param callable(Grant): T $work
     * @return T
     * @throws LockRefusedException|InvalidRequestException|BackendException
     */
    public function withLock(
        string $namespace,
        string $owner,
        string $op,
        array $targets,
        callable $work,
        int $ttlMs = LockEngine::DEFAULT_TTL_MS,
        int $waitMs = 0,
        bool $fair = true,
        ?Grant $reenter = null,
        ?string $idempotencyKey = null,
        ?Cancellation $cancellation = null,
    ): mixed;

    public function release(string $namespace, string $id, string $token): bool;

    public function renew(string $namespace, string $id, string $token, ?int $ttlMs = null): bool;

    public function isHeld(string $namespace, string $id, string $token): bool;

    public function forceRelease(string $namespace, string $id): bool;

    /** @return list<LockInfo> */
    public function list(string $namespace, string $prefix = '/'): array;

    public function listPage(string $namespace, string $prefix = '/', int $limit = 1000, string $after = ''): ListPage;

    /** @param array<string,string>|list<string> $targets */
    public function blockers(string $namespace, string $op, array $targets, int $limit = LockEngine::MAX_BLOCKERS): BlockersPage;

    /** @return list<WaiterInfo> */
    public function waiters(string $namespace, string $prefix = '/', int $limit = LockEngine::MAX_WAITERS): array;

    public function leave(string $namespace, string $waiterId): bool;
}
