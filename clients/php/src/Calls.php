<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;
use Pathlock\Exception\TimeoutException;

/**
 * @internal One engine's way to its library: the connection (Transport),
 * the library's loading and contract (LibraryLoader), the server's clock,
 * and the parts made from the contract once it is read (Input, Codec,
 * WaitPolicy); one function call with its arguments by name, one acquire
 * attempt. LockEngine is the facade over it.
 */
final class Calls
{
    public readonly Transport $transport;
    public readonly LibraryLoader $loader;
    private readonly ServerClock $clock;
    private ?Contract $contract = null;
    private ?Input $input = null;
    private ?Codec $codec = null;
    private ?WaitPolicy $policy = null;

    public function __construct(Connection $connection, private readonly Library $library)
    {
        $this->transport = new Transport($connection);
        $this->loader = new LibraryLoader($this->transport, $library);
        $this->clock = new ServerClock($this->transport);
    }

    /** The library's contract, read once (LockEngine::contract()); the server's clock read with it. */
    public function contract(): Contract
    {
        if ($this->contract === null) {
            $this->contract = $this->loader->contract();
            $this->clock->read();
        }
        return $this->contract;
    }

    /**
     * One attempt of $r (one call of the library's acquire, or of its
     * convert) with reserve_ms $reserveMs and its deadline_ms
     * (protocol 4.2) on the server's clock: the moment this client stops
     * waiting for the answer, which is the command timeout, or for a
     * waiting acquire at most $until (Transport::nowMs() clock) +
     * WAIT_MARGIN_MS. A `late` answer (the server's clock ran ahead of this
     * client's estimate) is sent once more with a fresh one; a lost reply
     * of a request with an idempotency key at most twice more.
     */
    public function attempt(AcquireRequest $r, int $reserveMs, ?float $until): AcquireResult
    {
        $resent = 0;
        for ($try = 0; ; $try++) {
            $this->clock->refresh($this->transport->budgetMs($until, LockEngine::WAIT_MARGIN_MS));
            $budget = $this->transport->budgetMs($until, LockEngine::WAIT_MARGIN_MS);
            $args = $this->codec()->acquireArgs($r, $reserveMs, $this->clock->deadline($budget));
            try {
                $reply = $this->transport->withReadTimeout($budget, fn(): array => $this->call($r->function, $r->namespace, $args));
            } catch (InvalidRequestException $e) {
                throw $this->input()->withPaths($e, $r->op, $r->paths);
            } catch (BackendException $e) {
                // Sent again only with an idempotency key (the retry gets the lock the first
                // one made), as the Go and Node clients do; never after its deadline or an error reply.
                if ($r->idempotencyKey === '' || $resent++ >= 2 || $e instanceof TimeoutException
                    || !$e->getPrevious() instanceof \RedisException) {
                    throw $e;
                }
                continue;
            }
            if ($reply[0] !== 'late') {
                return Codec::acquireResult($reply, $r->function);
            }
            $this->clock->correct((float) $reply[1]);
            if ($try > 0) {
                throw new BackendException("{$r->function} reached the server after its deadline twice (the server's clock runs ahead); nothing was changed");
            }
        }
    }

    /**
     * One call of function $fn with the values of its arguments by name
     * (Codec::args()) and $paths for its `path...`.
     *
     * @param array<string,string> $values
     * @param list<string> $paths
     * @return array<int,mixed>
     */
    public function callNamed(string $fn, string $namespace, array $values, array $paths = [], bool $readOnly = false): array
    {
        return $this->call($fn, $namespace, $this->codec()->args($fn, $values, $paths), $readOnly);
    }

    /**
     * One call of function $fn with the namespace's keys and $args; the
     * library loaded and the call sent once more after `ERR Function not found`.
     *
     * @param list<string> $args
     * @return array<int,mixed>
     */
    public function call(string $fn, string $namespace, array $args, bool $readOnly = false): array
    {
        $keys = $this->codec()->keys($fn, $namespace);
        $r = $this->transport->fcall($fn, $this->library->functionPrefix . $fn, $keys, $args, $readOnly, $this->loader->load(...));
        return Codec::checked($fn, $namespace, $this->library->name, $r);
    }

    /** The wake-up subscription of $namespace's channel (its key `wake`), null when it cannot be made. */
    public function subscribe(string $namespace): ?WakeSubscription
    {
        $keys = $this->contract()->keys($namespace);
        $at = array_search('wake', $this->contract()->keySuffixes, true);
        try {
            return $at === false ? null : $this->transport->connection->subscribe($keys[$at]);
        } catch (BackendException) {
            // No wake-ups (no channel rights, a proxy without sharded pub/sub):
            // the re-check alone keeps the wait correct, only slower.
            return null;
        }
    }

    public function input(): Input
    {
        return $this->input ??= new Input($this->contract());
    }

    public function codec(): Codec
    {
        return $this->codec ??= new Codec($this->contract());
    }

    public function policy(): WaitPolicy
    {
        return $this->policy ??= WaitPolicy::fromContract($this->contract());
    }
}
