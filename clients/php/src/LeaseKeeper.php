<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;

/**
 * Keeps leases renewed in a synchronous PHP program (docs/php.md "Keeping a
 * lease"). PHP has no background thread, so the program calls tick() from
 * its work loop (between chunks of the work the lock protects); tick()
 * renews every kept lease that is due, and dueInMs() says how long the
 * program may block (in stream_select, say) before the next tick() has work.
 *
 * A lease is renewed when a third of its TTL has passed since the last
 * renewal was sent (renewAfter), each time with its TTL. A renewal that
 * finds no lock reports the lease lost at once (KeptLease::MISSING). A
 * renewal that fails (BackendException: Redis unreachable, restarting) is
 * tried again every retryMs while the lease may still be alive; once the
 * lease's end (measured from before the last successful renewal was sent,
 * so it errs towards early) has passed, the lease is lost
 * (KeptLease::EXPIRED). Losing a lease sets isLost() and calls its onLost
 * callback once, inside tick(); an exception thrown by onLost leaves tick()
 * (the other leases are renewed at the next tick()), which is a way to stop
 * the work. The keeper calls only LockEngineInterface::renew(). Go, Node,
 * Python and C++ have the same semantics with a thread or timers of their own.
 *
 * Automatic ticking (tickOnAlarm(), needs the pcntl extension): SIGALRM
 * calls tick() between any two statements of the program, so a loop that
 * never calls tick() (a long library call, say) still keeps its leases; see
 * that method for its caveats.
 *
 * Not safe to share between processes: after a fork, keep in one only.
 */
final class LeaseKeeper
{
    /** @var array<int,KeptLease> by spl_object_id */
    private array $leases = [];
    private bool $onAlarm = false;

    /**
     * @param float $renewAfter renew when this fraction of the TTL has passed (0 < f < 1)
     * @param int $retryMs after a failed renewal, try again this much later (at most until the lease's end)
     */
    public function __construct(
        private readonly LockEngineInterface $engine,
        public readonly float $renewAfter = 1 / 3,
        public readonly int $retryMs = 100,
    ) {
        if (!($renewAfter > 0 && $renewAfter < 1) || $retryMs < 1) {
            throw new InvalidRequestException('LeaseKeeper: renewAfter must be between 0 and 1, retryMs at least 1');
        }
    }

    /**
     * Starts keeping $grant's lease (namespace $namespace, each renewal with
     * $ttlMs, 1 ms to a week). $onLost(KeptLease) is called once, in tick(),
     * if the lease is lost. No call to Redis is made here.
     *
     * @param ?callable(KeptLease): void $onLost
     * @throws InvalidRequestException for a bad TTL
     */
    public function keep(string $namespace, Grant $grant, int $ttlMs, ?callable $onLost = null): KeptLease
    {
        if ($ttlMs < 1 || $ttlMs > 604800000) {
            throw new InvalidRequestException('ttl must be 1 to 604800000 ms');
        }
        $lease = new KeptLease($this, $namespace, $grant, $ttlMs, $onLost === null ? null : $onLost(...), self::now());
        $this->leases[spl_object_id($lease)] = $lease;
        $this->armAlarm();
        return $lease;
    }

    /**
     * Renews every lease that is due and reports the lost ones (their onLost
     * runs here). Call it at least every dueInMs() ms.
     */
    public function tick(): void
    {
        foreach ($this->leases as $lease) {
            if (!$lease->stopped && !$lease->isLost() && self::now() >= $lease->renewAt) {
                $this->renew($lease);
            }
        }
    }

    /**
     * Ticks on SIGALRM from now on (pcntl_async_signals and pcntl_alarm):
     * false, and nothing changes, without the pcntl extension. Caveats:
     * - SIGALRM counts whole seconds, so a renewal may come up to 1 s late:
     *   keep leases of 5 s or more this way.
     * - tick() and onLost then run inside the signal handler, between any two
     *   statements of the program: give the keeper a LockEngine on a
     *   connection of its own (LockEngine::connect() once more), which the
     *   program does not use, and let onLost only set a flag (an exception
     *   it throws would leave from whatever statement was running).
     * - The signal interrupts blocking calls: sleep() and usleep() return
     *   early, stream_select() returns false; retry them.
     * - The process has one SIGALRM: this replaces any handler and alarm of
     *   the program's own. stopAlarm() gives it back (to SIG_DFL).
     */
    public function tickOnAlarm(): bool
    {
        if (!function_exists('pcntl_alarm') || !function_exists('pcntl_async_signals')) {
            return false;
        }
        pcntl_async_signals(true);
        pcntl_signal(SIGALRM, function (): void {
            try {
                $this->tick();
            } finally {
                $this->armAlarm();
            }
        });
        $this->onAlarm = true;
        $this->armAlarm();
        return true;
    }

    /** Stops tickOnAlarm(): no alarm pending, SIGALRM's default action back. */
    public function stopAlarm(): void
    {
        if ($this->onAlarm) {
            $this->onAlarm = false;
            pcntl_alarm(0);
            pcntl_signal(SIGALRM, SIG_DFL);
        }
    }

    /** Milliseconds until tick() has work (0: now), or null when no lease is kept. */
    public function dueInMs(): ?int
    {
        $next = null;
        foreach ($this->leases as $lease) {
            $next = $next === null ? $lease->renewAt : min($next, $lease->renewAt);
        }
        return $next === null ? null : max(0, (int) ceil($next - self::now()));
    }

    /** Stops keeping $lease (safe twice, and from onLost); no renewal of it follows. */
    public function stop(KeptLease $lease): void
    {
        $lease->stopped = true;
        unset($this->leases[spl_object_id($lease)]);
    }

    /** The leases being kept. */
    public function count(): int
    {
        return count($this->leases);
    }

    /** Stops keeping every lease, and ticking on SIGALRM. */
    public function close(): void
    {
        $this->stopAlarm();
        foreach ($this->leases as $lease) {
            $this->stop($lease);
        }
    }

    /** With tickOnAlarm(): the next SIGALRM when the next renewal is due (whole seconds, at least 1). */
    private function armAlarm(): void
    {
        if ($this->onAlarm) {
            $due = $this->dueInMs();
            pcntl_alarm($due === null ? 0 : max(1, intdiv($due + 999, 1000)));
        }
    }

    private function renew(KeptLease $lease): void
    {
        $sent = self::now();
        try {
            $renewed = $this->engine->renew($lease->namespace, $lease->grant->id, $lease->grant->token, $lease->ttlMs);
        } catch (BackendException $e) {
            $now = self::now();
            if ($now >= $lease->endsAt) {
                $this->lose($lease, KeptLease::EXPIRED, $e);
            } else {
                $lease->failed($e, $now);
            }
            return;
        }
        if ($renewed) {
            $lease->renewed($sent);
        } else {
            $this->lose($lease, KeptLease::MISSING, null);
        }
    }

    private function lose(KeptLease $lease, string $reason, ?\Throwable $e): void
    {
        unset($this->leases[spl_object_id($lease)]);
        if ($e !== null) {
            $lease->failed($e, self::now());
        }
        $lease->lose($reason);
    }

    /** Monotonic milliseconds. */
    private static function now(): float
    {
        return hrtime(true) / 1e6;
    }
}
