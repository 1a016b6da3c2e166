<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * @internal One acquire() or convert() call as its attempts send it,
 * checked: the canonical paths in role order, the ids a grant or a place in
 * line would take, and the default limits read for it. Codec::acquireArgs()
 * turns it into the call's arguments by name: a conversion sends acquire's
 * arguments by the same names to the library's `convert`, with no owner and
 * no new id or token, its lock's proof as reenter_id and reenter_token.
 */
final class AcquireRequest
{
    public const ACQUIRE = 'acquire';
    public const CONVERT = 'convert';

    /** The place in line's id: '' when the request takes none. */
    public readonly string $waiterId;

    /** @param list<string> $paths */
    public function __construct(
        public readonly string $namespace,
        public readonly string $owner,
        public readonly string $op,
        public readonly array $paths,
        public readonly int $ttlMs,
        public readonly int $waitMs,
        public readonly bool $fair,
        public readonly ?Grant $reenter,
        public readonly string $idempotencyKey,
        public readonly string $defaultLimits,
        public readonly string $newId,
        public readonly string $newToken,
        string $waiterId,
        public readonly string $function = self::ACQUIRE,
    ) {
        $this->waiterId = $this->inLine() ? $waiterId : '';
    }

    /**
     * Fresh ids: [new_id, new_token, waiter_id] (the waiter's `w` + 24 hex
     * digits, used only when the request takes a place in line).
     *
     * @return array{string, string, string}
     */
    public static function freshIds(): array
    {
        return [bin2hex(random_bytes(12)), bin2hex(random_bytes(16)), 'w' . bin2hex(random_bytes(12))];
    }

    /** Whether the request keeps a place in line while it waits: fair, waiting, not a reentry. */
    public function inLine(): bool
    {
        return $this->fair && $this->waitMs > 0 && !$this->reentry();
    }

    /** Whether it is one attempt only (no wait, or a reentry: never waits). */
    public function once(): bool
    {
        return $this->waitMs === 0 || $this->reentry();
    }

    /** Whether its attempts call the library's `convert` ($reenter is then the lock converted). */
    public function converts(): bool
    {
        return $this->function === self::CONVERT;
    }

    /** An acquire that takes its lock once more: a conversion's proof is no reentry, it waits as a new lock does. */
    private function reentry(): bool
    {
        return $this->reenter !== null && !$this->converts();
    }
}
