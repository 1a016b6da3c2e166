<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * A held lock that gives itself back: call release() in a `finally` block;
 * if the guard is dropped without it (an early return, an exception, the end
 * of the request), its destructor releases the lock and swallows any error
 * (a destructor must not throw; the lease ends on its own anyway).
 *
 *     $guard = $engine->lock('project-42', 'alice', 'move_folder', ['src' => '/p/A', 'dst' => '/p/B'], waitMs: 2000);
 *     try {
 *         // work, passing $guard->grant->fence to every storage write
 *     } finally {
 *         $guard->release();
 *     }
 */
final class LockGuard
{
    private bool $released = false;

    public function __construct(
        private readonly LockEngine $engine,
        public readonly string $namespace,
        public readonly Grant $grant,
    ) {
    }

    /** Gives back this guard's hold; true if it was still held. Later calls do nothing and answer false. */
    public function release(): bool
    {
        if ($this->released) {
            return false;
        }
        $this->released = true;
        return $this->engine->release($this->namespace, $this->grant->id, $this->grant->token);
    }

    /** Extends the lease (to now + ttl, or the lock's own TTL); false when the lock was lost. */
    public function renew(?int $ttlMs = null): bool
    {
        return !$this->released && $this->engine->renew($this->namespace, $this->grant->id, $this->grant->token, $ttlMs);
    }

    /** Still the holder? (read-only; check it next to the fence before a storage write commits) */
    public function isHeld(): bool
    {
        return !$this->released && $this->engine->isHeld($this->namespace, $this->grant->id, $this->grant->token);
    }

    public function isReleased(): bool
    {
        return $this->released;
    }

    public function __destruct()
    {
        if ($this->released) {
            return;
        }
        try {
            $this->release();
        } catch (\Throwable) {
            // never throw from a destructor; the lease ends by itself
        }
    }
}
