<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\InvalidRequestException;

/**
 * @internal The shell's read commands (docs/cli.md): `locks`, `blockers`
 * and `waiters`, their words read and their answers made (ShellAnswers).
 */
final class ShellQueries
{
    public function __construct(
        private readonly LockEngine $engine,
        private readonly string $namespace,
    ) {
    }

    /** @return array<string,mixed> */
    public function locks(array $w, \Closure $opt): array
    {
        $prefix = $after = null;
        $limit = null;
        for ($i = 1; $i < count($w); $i++) {
            if ($opt($i, 'limit=')) {
                $limit = ShellWords::limit($limit, $w[$i], LockEngine::MAX_LIST_LIMIT);
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
            return ['locks' => array_map(ShellAnswers::lock(...), $this->engine->list($this->namespace, $prefix ?? '/'))];
        }
        $page = $this->engine->listPage($this->namespace, $prefix ?? '/', $limit, $after ?? '');
        return ['locks' => array_map(ShellAnswers::lock(...), $page->locks), 'next' => $page->next === '' ? null : $page->next];
    }

    /**
     * blockers OP PATH [DST_PATH] [fair=true|false] [limit=N] [converts=ID]:
     * with converts=, the dry run of a conversion of lock ID (fair=false
     * asks the held locks only); without it, fair=false leaves the places
     * in line out of the answer. Each option once.
     *
     * @return array<string,mixed>
     */
    public function blockers(array $w, \Closure $opt): array
    {
        $fair = $limit = $converts = null;
        $positional = [];
        for ($i = 1; $i < count($w); $i++) {
            if ($opt($i, 'limit=')) {
                $limit = ShellWords::limit($limit, $w[$i], LockEngine::MAX_BLOCKERS);
            } elseif ($opt($i, 'fair=')) {
                $fair = ShellWords::once($fair, $w[$i], 5);
                if ($fair !== 'true' && $fair !== 'false') {
                    throw new InvalidRequestException('fair= takes true or false');
                }
            } elseif ($opt($i, 'converts=')) {
                $converts = ShellWords::once($converts, $w[$i], 9);
            } else {
                $positional[] = $w[$i];
            }
        }
        if (count($positional) < 2 || count($positional) > 3) {
            throw new InvalidRequestException('usage: blockers OP PATH [DST_PATH] [fair=true|false] [limit=N] [converts=ID]');
        }
        $op = $positional[0];
        $fair = $fair !== 'false';
        ShellWords::checkPaths($this->engine->contract(), $op, count($positional) - 1);
        $page = $this->engine->blockers($this->namespace, $op, array_slice($positional, 1), $limit ?? LockEngine::MAX_BLOCKERS,
            converts: $converts, fair: $fair || $converts === null);
        $rows = [];
        foreach ($page->blockers as $b) {
            if (!$fair && $b->queued) {
                continue;   // a request that is not fair ignores the line
            }
            $rows[] = ShellAnswers::blocker($b);
        }
        return ['blockers' => $rows, 'truncated' => $page->truncated];
    }

    /** @return array<string,mixed> */
    public function waiters(array $w, \Closure $opt): array
    {
        $prefix = null;
        $limit = null;
        for ($i = 1; $i < count($w); $i++) {
            if ($opt($i, 'limit=')) {
                $limit = ShellWords::limit($limit, $w[$i], LockEngine::MAX_WAITERS);
            } else {
                if ($prefix !== null) {
                    throw new InvalidRequestException('usage: waiters [PREFIX] [limit=N]');
                }
                $prefix = $w[$i];
            }
        }
        $rows = [];
        foreach ($this->engine->waiters($this->namespace, $prefix ?? '/', $limit ?? LockEngine::MAX_WAITERS) as $x) {
            $rows[] = ShellAnswers::waiter($x);
        }
        return ['waiters' => $rows];
    }
}
