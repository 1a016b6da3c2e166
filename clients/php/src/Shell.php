<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\InvalidRequestException;
use Pathlock\Exception\PathlockException;
use Pathlock\Exception\TimeoutException;

/**
 * The shell line protocol of `pathlock shell` (docs/cli.md), spoken over a
 * LockEngine: one command per line in, exactly one JSON object per line
 * out, flushed after each. While an `acquire ... wait=MS` waits, the input
 * is still read: a `cancel` line stops the wait, other lines are answered
 * in order after the acquire's answer.
 */
final class Shell implements Cancellation
{
    public const CLIENT = 'pathlock-php';

    /** @var resource */
    private $in;
    /** @var resource */
    private $out;
    private string $buffer = '';
    private bool $eof = false;
    /** @var list<string|true> lines read and not answered yet; true: a cancel that stopped a wait */
    private array $queue = [];
    private bool $waiting = false;
    private readonly LeaseKeeper $keeper;
    private readonly ShellQueries $queries;
    /** @var array<string,KeptLease> keep, kept, unkeep: by lock id */
    private array $kept = [];
    private readonly ?Connection $connection;
    /** Whether the connection takes a read timeout per call (the `deadline` feature). */
    private readonly bool $deadlines;

    /**
     * @param resource $in
     * @param resource $out
     * @param \Redis|Connection|null $connection the engine's connection: given, and able to change its read
     *   timeout (not a Redis Cluster's), `deadline=MS` sets that timeout for one call
     */
    public function __construct(
        private readonly LockEngine $engine,
        private readonly string $namespace,
        $in,
        $out,
        \Redis|Connection|null $connection = null,
    ) {
        $this->connection = $connection instanceof \Redis ? new StandaloneConnection($connection) : $connection;
        $this->deadlines = $this->connection !== null && $this->connection->setReadTimeout($this->connection->readTimeout());
        $this->in = $in;
        $this->out = $out;
        $this->keeper = new LeaseKeeper($engine);
        $this->queries = new ShellQueries($engine, $namespace);
    }

    /** Answers every line until the end of the input. */
    public function run(): void
    {
        stream_set_blocking($this->in, false);
        while (($line = $this->nextLine()) !== null) {
            if ($line === true) {
                $this->write(['cancelled' => true]);
                continue;
            }
            $answer = $this->answer($line);
            if ($answer !== null) {
                $this->write($answer);
            }
        }
    }

    /**
     * The answer to one line, or null for an empty or comment line.
     *
     * @return array<string,mixed>|null
     */
    public function answer(string $line): ?array
    {
        if (str_contains($line, "\r")) {
            return ['error' => 'the line holds a carriage return (CR): lines end with LF alone, not CRLF'];
        }
        $trimmed = ltrim($line, " \t");
        if ($trimmed === '' || $trimmed[0] === '#') {
            return null;
        }
        try {
            [$words, $quoted] = ShellWords::splitWords($line);
            return $this->run1($words, $quoted);
        } catch (TimeoutException $e) {
            return ['error' => $e->getMessage(), 'timed_out' => true];  // gave up at its deadline=
        } catch (PathlockException $e) {
            return ['error' => $e->getMessage()];
        }
    }

    // --- Cancellation, while an acquire waits -----------------------------------

    public function streams(): array
    {
        return $this->eof ? [] : [$this->in];
    }

    public function isCancelled(): bool
    {
        $this->fill();
        foreach ($this->queue as $i => $line) {
            if (is_string($line) && ShellWords::isCancelLine($line)) {
                $this->queue[$i] = true;   // answered {"cancelled":true} after the acquire's answer
                return true;
            }
        }
        return false;
    }

    // --- commands ---------------------------------------------------------------

    /**
     * @param list<string> $w
     * @param list<bool> $q
     * @return array<string,mixed>
     */
    private function run1(array $w, array $q): array
    {
        $cmd = $w[0];
        $opt = fn(int $i, string $name): bool => !$q[$i] && str_starts_with($w[$i], $name);
        switch ($cmd) {
            case 'hello':
                ShellWords::arity($w, 1, 1, 'hello');
                $features = ['cancel', 'blockers', 'waiters', ...($this->deadlines ? ['deadline'] : []), 'keep', 'protocol', 'convert'];
                return ['client' => self::CLIENT, 'version' => LockEngine::VERSION, 'features' => $features];
            case 'cancel':
                ShellWords::arity($w, 1, 1, 'cancel');
                return ['cancelled' => false];   // no acquire is waiting
            case 'acquire':
                return $this->acquire($w, $q, $opt);
            case 'convert':
                return $this->convert($w, $q);
            case 'release':
                ShellWords::arity($w, 3, 3, 'release ID TOKEN');
                $this->forget($w[1]);   // a released lock is no longer kept (nor lost)
                return ['released' => $this->engine->release($this->namespace, $w[1], $w[2])];
            case 'renew':
                return $this->renew($w, $opt);
            case 'held':
                ShellWords::arity($w, 3, 4, 'held ID TOKEN [deadline=MS]');
                if (count($w) === 4 && !$opt(3, 'deadline=')) {
                    throw new InvalidRequestException('usage: held ID TOKEN [deadline=MS]');
                }
                $deadline = count($w) === 4 ? $this->deadline($w[3]) : null;
                return ['held' => $this->within($deadline, fn(): bool => $this->engine->isHeld($this->namespace, $w[1], $w[2]))];
            case 'force-release':
                ShellWords::arity($w, 2, 2, 'force-release ID');
                return ['released' => $this->engine->forceRelease($this->namespace, $w[1])];
            case 'locks':
                return $this->queries->locks($w, $opt);
            case 'blockers':
                return $this->queries->blockers($w, $opt);
            case 'waiters':
                return $this->queries->waiters($w, $opt);
            case 'protocol':
                return $this->protocol($w, $opt);
            case 'keep':
                return $this->keep($w, $opt);
            case 'kept':
                ShellWords::arity($w, 2, 2, 'kept ID');
                $lost = isset($this->kept[$w[1]]) && $this->kept[$w[1]]->isLost();
                return ['keeping' => isset($this->kept[$w[1]]) && !$lost, 'lost' => $lost];
            case 'unkeep':
                ShellWords::arity($w, 2, 2, 'unkeep ID');
                return ['unkept' => $this->forget($w[1])];
        }
        throw new InvalidRequestException(
            "unknown command '$cmd' (acquire, convert, release, renew, held, locks, force-release, blockers, waiters, hello, cancel, keep, kept, unkeep, protocol)",
        );
    }

    /**
     * renew ID TOKEN [ttl=MS]
     *
     * @param list<string> $w
     * @return array<string,mixed>
     */
    private function renew(array $w, \Closure $opt): array
    {
        ShellWords::arity($w, 3, 4, 'renew ID TOKEN [ttl=MS]');
        $ttl = null;
        if (count($w) === 4) {
            if (!$opt(3, 'ttl=')) {
                throw new InvalidRequestException('usage: renew ID TOKEN [ttl=MS]');
            }
            $ttl = ShellWords::ms($w[3], 4);
        }
        return ['renewed' => $this->engine->renew($this->namespace, $w[1], $w[2], $ttl)];
    }

    /** @return array<string,mixed> */
    private function acquire(array $w, array $q, \Closure $opt): array
    {
        $o = ShellWords::REQUEST_OPTIONS;
        $reenterId = $token = $deadline = null;
        $positional = $given = [];
        for ($i = 1; $i < count($w); $i++) {
            if (ShellWords::requestOption($o, $given, $w, $q, $i)) {
                continue;
            }
            if ($opt($i, 'reenter=')) {
                $reenterId = ShellWords::once($reenterId, $w[$i], 8);
            } elseif ($opt($i, 'token=')) {
                $token = ShellWords::once($token, $w[$i], 6);
            } elseif ($opt($i, 'deadline=')) {
                if ($deadline !== null) {
                    throw new InvalidRequestException('deadline= is given twice');
                }
                $deadline = $this->deadline($w[$i]);
            } else {
                $positional[] = $w[$i];
            }
        }
        if (count($positional) < 3 || count($positional) > 4) {
            throw new InvalidRequestException(
                'usage: acquire OWNER OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false] [reenter=ID token=TOKEN] [key=IDEMPOTENCY_KEY] [deadline=MS]',
            );
        }
        if (($reenterId === null) !== ($token === null)) {
            throw new InvalidRequestException('reenter=ID and token=TOKEN come together');
        }
        [$owner, $op] = $positional;
        ShellWords::checkPaths($this->engine->contract(), $op, count($positional) - 2);
        $reenter = $reenterId !== null ? new Grant($reenterId, (string) $token, 0, 0, 0) : null;
        $this->waiting = $o['wait'] > 0;
        try {
            $r = $this->within($deadline, fn(): \Pathlock\AcquireResult => $this->engine->acquire($this->namespace, $owner, $op,
                array_slice($positional, 2), ttlMs: $o['ttl'], waitMs: $o['wait'], fair: $o['fair'], reenter: $reenter,
                idempotencyKey: $o['key'], cancellation: $o['wait'] > 0 ? $this : null));
        } finally {
            $this->waiting = false;
        }
        return ShellAnswers::acquire($r);
    }

    /**
     * convert ID TOKEN OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false]
     * [key=KEY] (docs/cli.md), answered as acquire. As in `pathlock shell`, a
     * waiting conversion is not stopped by `cancel` (answered
     * {"cancelled":false} after it): it ends at its wait.
     *
     * @return array<string,mixed>
     */
    private function convert(array $w, array $q): array
    {
        $o = ShellWords::REQUEST_OPTIONS;
        $positional = $given = [];
        for ($i = 1; $i < count($w); $i++) {
            if (!ShellWords::requestOption($o, $given, $w, $q, $i)) {
                $positional[] = $w[$i];
            }
        }
        if (count($positional) < 4 || count($positional) > 5) {
            throw new InvalidRequestException(
                'usage: convert ID TOKEN OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false] [key=IDEMPOTENCY_KEY]',
            );
        }
        [$id, $token, $op] = $positional;
        ShellWords::checkPaths($this->engine->contract(), $op, count($positional) - 3);
        return ShellAnswers::acquire($this->engine->convert($this->namespace, new Grant($id, $token, 0, 0, 0), $op,
            array_slice($positional, 3), ttlMs: $o['ttl'], waitMs: $o['wait'], fair: $o['fair'], idempotencyKey: $o['key']));
    }

    /**
     * protocol OP PATH [PATH...] [wait=MS] [fair=0|1] (the conformance kit's
     * clients/kit/test_protocol.py): the keys, the arguments of the first
     * attempt of `acquire OP PATH... owner=kit-owner ttl=1000 wait=MS` with
     * the ids kit-id, kit-token and kit-waiter, and the reserve_ms of an
     * in-line attempt with each of a few lefts, all from the engine's own
     * code (LockEngine::firstAttempt(), reserveMs()).
     *
     * @return array<string,mixed>
     */
    private function protocol(array $w, \Closure $opt): array
    {
        $wait = 0;
        $fair = true;
        $positional = $given = [];
        for ($i = 1; $i < count($w); $i++) {
            if ($opt($i, 'wait=')) {
                $wait = ShellWords::ms(ShellWords::firstTime($given, $w[$i], 5), 5);
            } elseif ($opt($i, 'fair=')) {
                $fair = match (ShellWords::firstTime($given, $w[$i], 5)) {
                    'fair=1', 'fair=true' => true,
                    'fair=0', 'fair=false' => false,
                    default => throw new InvalidRequestException('fair= takes 0 or 1'),
                };
            } else {
                $positional[] = $w[$i];
            }
        }
        if (count($positional) < 2) {
            throw new InvalidRequestException('usage: protocol OP PATH [PATH...] [wait=MS] [fair=0|1]');
        }
        $first = $this->engine->firstAttempt($this->namespace, 'kit-owner', $positional[0], array_slice($positional, 1),
            1000, $wait, $fair, ['kit-id', 'kit-token', 'kit-waiter']);
        $reserve = new \stdClass();
        foreach ([1, 150, 1799, 1800, 1801, 2500, 60000] as $left) {
            $reserve->{(string) $left} = $this->engine->reserveMs($left);
        }
        return ['keys' => $first['keys'], 'acquire_args' => $first['args'], 'reserve_ms' => $reserve];
    }

    /**
     * keep ID TOKEN ttl=MS: renews now (as renew ... ttl=MS), then the
     * LeaseKeeper keeps it, ticked while the shell waits for input.
     *
     * @return array<string,mixed>
     */
    private function keep(array $w, \Closure $opt): array
    {
        if (count($w) !== 4 || !$opt(3, 'ttl=')) {
            throw new InvalidRequestException('usage: keep ID TOKEN ttl=MS');
        }
        $ttl = ShellWords::ms($w[3], 4);
        if (!$this->engine->renew($this->namespace, $w[1], $w[2], $ttl)) {
            return ['keeping' => false];
        }
        $this->forget($w[1]);
        $this->kept[$w[1]] = $this->keeper->keep($this->namespace, new Grant($w[1], $w[2], 0, $ttl, 0), $ttl);
        return ['keeping' => true];
    }

    /** Stops keeping lock $id; true when it was kept (or lost). */
    private function forget(string $id): bool
    {
        if (!isset($this->kept[$id])) {
            return false;
        }
        $this->kept[$id]->stop();
        unset($this->kept[$id]);
        return true;
    }

    /** deadline=MS: 1 ms to a week; only with the connection (the `deadline` feature). */
    private function deadline(string $word): int
    {
        if (!$this->deadlines) {
            throw new InvalidRequestException($this->connection === null
                ? 'deadline= needs the connection (this shell was made without it)'
                : 'deadline= needs a read timeout per call, which a Redis Cluster (phpredis 5.3) does not have');
        }
        $ms = ShellWords::ms($word, 9);
        if ($ms < 1 || $ms > 604800000) {
            throw new InvalidRequestException("'$word' needs 1 to 604800000 ms");
        }
        return $ms;
    }

    /**
     * $call with the connection's read timeout (phpredis's per-command
     * deadline, which the client sends as deadline_ms) set to $ms, restored after.
     *
     * @template T
     * @param callable(): T $call
     * @return T
     */
    private function within(?int $ms, callable $call): mixed
    {
        if ($ms === null || $this->connection === null) {
            return $call();
        }
        $old = $this->connection->readTimeout();
        $this->connection->setReadTimeout($ms / 1000);
        try {
            return $call();
        } finally {
            $this->connection->setReadTimeout($old);
        }
    }

    /**
     * Splits a line into words (docs/cli.md "Quoting").
     *
     * @return array{0: list<string>, 1: list<bool>} the words and whether each was quoted
     */
    public static function splitWords(string $line): array
    {
        return ShellWords::splitWords($line);
    }

    // --- input and output ---------------------------------------------------------

    /** The next line to answer (string), a cancel that stopped a wait (true), or null at the end. */
    private function nextLine(): string|bool|null
    {
        while ($this->queue === []) {
            if ($this->eof) {
                return null;
            }
            $this->keeper->tick();   // the kept leases are renewed while the shell waits for input
            $due = $this->keeper->dueInMs();
            $read = [$this->in];
            $write = $except = null;
            if (@stream_select($read, $write, $except, $due === null ? null : intdiv($due, 1000), $due === null ? null : ($due % 1000) * 1000) === false) {
                continue;
            }
            $this->fill();
        }
        return array_shift($this->queue);
    }

    /** Reads what stdin has now (never blocks) into whole lines on the queue. */
    private function fill(): void
    {
        if ($this->eof) {
            return;
        }
        while (true) {
            $chunk = @fread($this->in, 65536);
            if ($chunk === false || $chunk === '') {
                if ($chunk === false || feof($this->in)) {
                    $this->eof = true;
                    if ($this->buffer !== '') {   // a last line without LF
                        $this->queue[] = $this->buffer;
                        $this->buffer = '';
                    }
                }
                return;
            }
            $this->buffer .= $chunk;
            while (($nl = strpos($this->buffer, "\n")) !== false) {
                $this->queue[] = substr($this->buffer, 0, $nl);
                $this->buffer = substr($this->buffer, $nl + 1);
            }
        }
    }

    /** @param array<string,mixed> $answer */
    private function write(array $answer): void
    {
        fwrite($this->out, ShellAnswers::line($answer));
        fflush($this->out);
    }
}
