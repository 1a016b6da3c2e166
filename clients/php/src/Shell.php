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
            [$words, $quoted] = self::splitWords($line);
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
            if (is_string($line) && self::isCancelLine($line)) {
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
                self::arity($w, 1, 1, 'hello');
                return ['client' => self::CLIENT, 'version' => LockEngine::VERSION, 'features' => $this->deadlines ? ['cancel', 'blockers', 'waiters', 'deadline', 'keep'] : ['cancel', 'blockers', 'waiters', 'keep']];
            case 'cancel':
                self::arity($w, 1, 1, 'cancel');
                return ['cancelled' => false];   // no acquire is waiting
            case 'acquire':
                return $this->acquire($w, $q, $opt);
            case 'release':
                self::arity($w, 3, 3, 'release ID TOKEN');
                $this->forget($w[1]);   // a released lock is no longer kept (nor lost)
                return ['released' => $this->engine->release($this->namespace, $w[1], $w[2])];
            case 'renew':
                self::arity($w, 3, 4, 'renew ID TOKEN [ttl=MS]');
                $ttl = null;
                if (count($w) === 4) {
                    if (!$opt(3, 'ttl=')) {
                        throw new InvalidRequestException('usage: renew ID TOKEN [ttl=MS]');
                    }
                    $ttl = self::ms($w[3], 4);
                }
                return ['renewed' => $this->engine->renew($this->namespace, $w[1], $w[2], $ttl)];
            case 'held':
                self::arity($w, 3, 4, 'held ID TOKEN [deadline=MS]');
                if (count($w) === 4 && !$opt(3, 'deadline=')) {
                    throw new InvalidRequestException('usage: held ID TOKEN [deadline=MS]');
                }
                $deadline = count($w) === 4 ? $this->deadline($w[3]) : null;
                return ['held' => $this->within($deadline, fn(): bool => $this->engine->isHeld($this->namespace, $w[1], $w[2]))];
            case 'force-release':
                self::arity($w, 2, 2, 'force-release ID');
                return ['released' => $this->engine->forceRelease($this->namespace, $w[1])];
            case 'locks':
                return $this->locks($w, $opt);
            case 'blockers':
                return $this->blockers($w, $opt);
            case 'waiters':
                return $this->waiters($w, $opt);
            case 'keep':
                return $this->keep($w, $opt);
            case 'kept':
                self::arity($w, 2, 2, 'kept ID');
                $lost = isset($this->kept[$w[1]]) && $this->kept[$w[1]]->isLost();
                return ['keeping' => isset($this->kept[$w[1]]) && !$lost, 'lost' => $lost];
            case 'unkeep':
                self::arity($w, 2, 2, 'unkeep ID');
                return ['unkept' => $this->forget($w[1])];
        }
        throw new InvalidRequestException(
            "unknown command '$cmd' (acquire, release, renew, held, locks, force-release, blockers, waiters, hello, cancel, keep, kept, unkeep)",
        );
    }

    /** @return array<string,mixed> */
    private function acquire(array $w, array $q, \Closure $opt): array
    {
        $ttl = LockEngine::DEFAULT_TTL_MS;
        $wait = 0;
        $fair = true;
        $reenterId = $token = $key = $deadline = null;
        $positional = $given = [];
        for ($i = 1; $i < count($w); $i++) {
            if ($opt($i, 'ttl=')) {
                $ttl = self::ms(self::firstTime($given, $w[$i], 4), 4);
            } elseif ($opt($i, 'wait=')) {
                $wait = self::ms(self::firstTime($given, $w[$i], 5), 5);
            } elseif (!$q[$i] && ($w[$i] === 'fair=true' || $w[$i] === 'fair=false')) {
                $fair = self::firstTime($given, $w[$i], 5) === 'fair=true';
            } elseif ($opt($i, 'fair=')) {
                throw new InvalidRequestException('fair= takes true or false');
            } elseif ($opt($i, 'reenter=')) {
                $reenterId = self::once($reenterId, $w[$i], 8);
            } elseif ($opt($i, 'token=')) {
                $token = self::once($token, $w[$i], 6);
            } elseif ($opt($i, 'key=')) {
                $key = self::once($key, $w[$i], 4);
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
        $roles = $this->engine->contract()->roles($op);
        if ($roles === null) {
            throw new InvalidRequestException("unknown operation '$op'");
        }
        if (count($positional) - 2 !== count($roles)) {
            throw new InvalidRequestException(sprintf("operation '%s' takes %d path(s), got %d", $op, count($roles), count($positional) - 2));
        }
        $reenter = $reenterId !== null ? new Grant($reenterId, (string) $token, 0, 0, 0) : null;
        $this->waiting = $wait > 0;
        try {
            $r = $this->within($deadline, fn(): \Pathlock\AcquireResult => $this->engine->acquire($this->namespace, $owner, $op,
                array_slice($positional, 2), ttlMs: $ttl, waitMs: $wait, fair: $fair, reenter: $reenter,
                idempotencyKey: $key, cancellation: $wait > 0 ? $this : null));
        } finally {
            $this->waiting = false;
        }
        return self::acquireReply($r);
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
        $ttl = self::ms($w[3], 4);
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
        $ms = self::ms($word, 9);
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

    /** @return array<string,mixed> the answer line of an acquire */
    private static function acquireReply(\Pathlock\AcquireResult $r): array
    {
        if ($r->cancelled) {
            return ['granted' => false, 'cancelled' => true];
        }
        if ($r->notHolder) {
            return ['granted' => false, 'not_holder' => true];
        }
        if ($r->overLimit !== null) {   // a limit of the namespace: at once, also when waiting
            $o = $r->overLimit;
            return ['granted' => false, 'over_limit' => ['limit' => $o->limit, 'max' => $o->max, 'count' => $o->count]];
        }
        if ($r->grant === null) {
            $c = $r->conflict;
            return ['granted' => false, 'conflict' => [
                'id' => $c->id,
                'op' => $c->op,
                'role' => $c->role,
                'path' => $c->path,
                'owner' => $c->owner,
                'expires_in_ms' => $c->expiresInMs,
                'requested_role' => $c->requestedRole,
                'requested_path' => $c->requestedPath,
                'relation' => $c->relation,
                'queued' => $c->queued,
            ]];
        }
        $g = $r->grant;
        return ['granted' => true, 'id' => $g->id, 'token' => $g->token, 'fence' => $g->fence, 'holds' => $g->holds, 'expires_in_ms' => $g->expiresInMs];
    }

    /** @return array<string,mixed> */
    private function locks(array $w, \Closure $opt): array
    {
        $prefix = $after = null;
        $limit = null;
        for ($i = 1; $i < count($w); $i++) {
            if ($opt($i, 'limit=')) {
                $limit = self::limit($limit, $w[$i], LockEngine::MAX_LIST_LIMIT);
            } elseif ($opt($i, 'after=')) {
                if ($after !== null) {
                    throw new InvalidRequestException('after= is given twice');
                }
                $after = substr($w[$i], 6);
                if ($after === '') {
                    throw new InvalidRequestException('after= needs a cursor: the "next" of the previous page');
                }
            } else {
                if ($prefix !== null) {
                    throw new InvalidRequestException('usage: locks [PREFIX] [limit=N] [after=CURSOR]');
                }
                $prefix = $w[$i];
            }
        }
        if ($limit === null) {
            if ($after !== null) {
                throw new InvalidRequestException('after= needs limit=');
            }
            return ['locks' => array_map(self::lockJson(...), $this->engine->list($this->namespace, $prefix ?? '/'))];
        }
        $page = $this->engine->listPage($this->namespace, $prefix ?? '/', $limit, $after ?? '');
        return ['locks' => array_map(self::lockJson(...), $page->locks), 'next' => $page->next === '' ? null : $page->next];
    }

    /** @return array<string,mixed> */
    private function blockers(array $w, \Closure $opt): array
    {
        $fair = true;
        $limit = null;
        $positional = [];
        for ($i = 1; $i < count($w); $i++) {
            if ($opt($i, 'limit=')) {
                $limit = self::limit($limit, $w[$i], LockEngine::MAX_BLOCKERS);
            } elseif ($opt($i, 'fair=')) {
                if ($w[$i] !== 'fair=true' && $w[$i] !== 'fair=false') {
                    throw new InvalidRequestException('fair= takes true or false');
                }
                $fair = $w[$i] === 'fair=true';
            } else {
                $positional[] = $w[$i];
            }
        }
        if (count($positional) < 2 || count($positional) > 3) {
            throw new InvalidRequestException('usage: blockers OP PATH [DST_PATH] [fair=true|false] [limit=N]');
        }
        $op = $positional[0];
        $roles = $this->engine->contract()->roles($op);
        if ($roles === null) {
            throw new InvalidRequestException("unknown operation '$op'");
        }
        if (count($positional) - 1 !== count($roles)) {
            throw new InvalidRequestException(sprintf("operation '%s' takes %d path(s), got %d", $op, count($roles), count($positional) - 1));
        }
        $page = $this->engine->blockers($this->namespace, $op, array_slice($positional, 1), $limit ?? LockEngine::MAX_BLOCKERS);
        $rows = [];
        foreach ($page->blockers as $b) {
            if (!$fair && $b->queued) {
                continue;   // a request that is not fair ignores the line
            }
            $rows[] = [
                'kind' => $b->queued ? 'waiter' : 'lock',
                'queued' => $b->queued,
                'id' => $b->id,
                'owner' => $b->owner,
                'op' => $b->op,
                'role' => $b->role,
                'path' => $b->path,
                'requested_role' => $b->requestedRole,
                'requested_path' => $b->requestedPath,
                'relation' => $b->relation,
                'fence' => $b->fence,
                'holds' => $b->holds,
                'expires_in_ms' => $b->expiresInMs,
                'waited_ms' => $b->waitedMs,
            ];
        }
        return ['blockers' => $rows, 'truncated' => $page->truncated];
    }

    /** @return array<string,mixed> */
    private function waiters(array $w, \Closure $opt): array
    {
        $prefix = null;
        $limit = null;
        for ($i = 1; $i < count($w); $i++) {
            if ($opt($i, 'limit=')) {
                $limit = self::limit($limit, $w[$i], LockEngine::MAX_WAITERS);
            } else {
                if ($prefix !== null) {
                    throw new InvalidRequestException('usage: waiters [PREFIX] [limit=N]');
                }
                $prefix = $w[$i];
            }
        }
        $rows = [];
        foreach ($this->engine->waiters($this->namespace, $prefix ?? '/', $limit ?? LockEngine::MAX_WAITERS) as $x) {
            $rows[] = self::whoJson($x) + ['waited_ms' => $x->waitedMs, 'expires_in_ms' => $x->expiresInMs];
        }
        return ['waiters' => $rows];
    }

    /** @return array<string,mixed> */
    private static function lockJson(LockInfo $l): array
    {
        return self::whoJson($l) + ['fence' => $l->fence, 'holds' => $l->holds, 'expires_in_ms' => $l->expiresInMs];
    }

    /**
     * The fields that name a lock or a waiting request, first in its row.
     *
     * @return array<string,mixed>
     */
    private static function whoJson(LockInfo|WaiterInfo $x): array
    {
        return ['id' => $x->id, 'owner' => $x->owner, 'op' => $x->op, 'targets' => (object) $x->targets];
    }

    // --- words and numbers --------------------------------------------------------

    /**
     * Splits a line into words (docs/cli.md "Quoting").
     *
     * @return array{0: list<string>, 1: list<bool>} the words and whether each was quoted
     */
    public static function splitWords(string $line): array
    {
        $words = [];
        $quoted = [];
        $n = strlen($line);
        $i = 0;
        while (true) {
            while ($i < $n && ($line[$i] === ' ' || $line[$i] === "\t")) {
                $i++;
            }
            if ($i === $n) {
                break;
            }
            $word = '';
            if ($line[$i] === '"') {
                $i++;
                $closed = false;
                while ($i < $n) {
                    $c = $line[$i++];
                    if ($c === '"') {
                        $closed = true;
                        break;
                    }
                    if ($c === '\\') {
                        if ($i === $n || ($line[$i] !== '"' && $line[$i] !== '\\')) {
                            throw new InvalidRequestException('in a quoted word, a backslash must be followed by " or \\');
                        }
                        $word .= $line[$i++];
                    } else {
                        $word .= $c;
                    }
                }
                if (!$closed) {
                    throw new InvalidRequestException('unterminated quote');
                }
                if ($i < $n && $line[$i] !== ' ' && $line[$i] !== "\t") {
                    throw new InvalidRequestException('a closing quote must end the word');
                }
                $quoted[] = true;
            } else {
                while ($i < $n && $line[$i] !== ' ' && $line[$i] !== "\t") {
                    $word .= $line[$i++];
                }
                $quoted[] = false;
            }
            $words[] = $word;
        }
        return [$words, $quoted];
    }

    private static function isCancelLine(string $line): bool
    {
        if (str_contains($line, "\r")) {
            return false;
        }
        try {
            [$w, $q] = self::splitWords($line);
        } catch (InvalidRequestException) {
            return false;
        }
        return $w === ['cancel'] && $q === [false];
    }

    private static function arity(array $w, int $lo, int $hi, string $usage): void
    {
        if (count($w) < $lo || count($w) > $hi) {
            throw new InvalidRequestException("usage: $usage");
        }
    }

    private static function ms(string $word, int $skip): int
    {
        $v = substr($word, $skip);
        if (preg_match('/\A-?[0-9]{1,18}\z/', $v) !== 1) {
            throw new InvalidRequestException("'$word' needs a whole number of milliseconds");
        }
        return (int) $v;
    }

    /** limit=N (at most once: $current is null the first time) from 1 to $max. */
    private static function limit(?int $current, string $word, int $max): int
    {
        if ($current !== null) {
            throw new InvalidRequestException('limit= is given twice');
        }
        $v = substr($word, 6);
        if (preg_match('/\A[0-9]{1,18}\z/', $v) !== 1 || (int) $v < 1 || (int) $v > $max) {
            throw new InvalidRequestException("'$word' needs a whole number from 1 to $max");
        }
        return (int) $v;
    }

    /**
     * Option word $word (its name the first $skip bytes), recorded in $given;
     * an error when it was given before: each option once (docs/cli.md).
     *
     * @param array<string,true> $given
     */
    private static function firstTime(array &$given, string $word, int $skip): string
    {
        $name = substr($word, 0, $skip);
        if (isset($given[$name])) {
            throw new InvalidRequestException("$name is given twice");
        }
        $given[$name] = true;
        return $word;
    }

    private static function once(?string $current, string $word, int $skip): string
    {
        $name = substr($word, 0, $skip);
        if ($current !== null) {
            throw new InvalidRequestException("$name is given twice");
        }
        if (strlen($word) === $skip) {
            throw new InvalidRequestException("$name needs a value");
        }
        return substr($word, $skip);
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
        $json = json_encode(
            self::sorted($answer),
            JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE | JSON_THROW_ON_ERROR,
        );
        fwrite($this->out, $json . "\n");
        fflush($this->out);
    }

    /** Objects with their keys in byte order, as the C++ shell writes them. */
    private static function sorted(mixed $v): mixed
    {
        if ($v instanceof \stdClass) {
            $a = get_object_vars($v);
            ksort($a, SORT_STRING);
            return (object) array_map(self::sorted(...), $a);
        }
        if (is_array($v)) {
            if (array_is_list($v)) {
                return array_map(self::sorted(...), $v);
            }
            ksort($v, SORT_STRING);
            return array_map(self::sorted(...), $v);
        }
        return $v;
    }
}
