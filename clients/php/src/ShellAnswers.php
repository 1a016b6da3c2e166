<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * @internal The JSON objects the shell answers (docs/cli.md), as the C++
 * shell writes them: an acquire's answer, the rows of `locks`, `blockers`
 * and `waiters`, keys in byte order.
 */
final class ShellAnswers
{
    /** @return array<string,mixed> the answer line of an acquire or a conversion */
    public static function acquire(\Pathlock\AcquireResult $r): array
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
            return ['granted' => false, ...($r->wouldDeadlock ? ['would_deadlock' => true] : []), 'conflict' => [
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

    /** @return array<string,mixed> a row of `blockers` */
    public static function blocker(Blocker $b): array
    {
        return [
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

    /** @return array<string,mixed> a row of `waiters`; a waiting conversion adds `converts`, the lock it converts */
    public static function waiter(WaiterInfo $x): array
    {
        return self::who($x) + ['waited_ms' => $x->waitedMs, 'expires_in_ms' => $x->expiresInMs]
            + ($x->converts !== '' ? ['converts' => $x->converts] : []);
    }

    /** @return array<string,mixed> */
    public static function lock(LockInfo $l): array
    {
        return self::who($l) + ['fence' => $l->fence, 'holds' => $l->holds, 'expires_in_ms' => $l->expiresInMs];
    }

    /**
     * The fields that name a lock or a waiting request, first in its row.
     *
     * @return array<string,mixed>
     */
    public static function who(LockInfo|WaiterInfo $x): array
    {
        return ['id' => $x->id, 'owner' => $x->owner, 'op' => $x->op, 'targets' => (object) $x->targets];
    }

    /**
     * One answer line: JSON with its objects' keys in byte order.
     *
     * @param array<string,mixed> $answer
     */
    public static function line(array $answer): string
    {
        return json_encode(
            self::sorted($answer),
            JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE | JSON_THROW_ON_ERROR,
        ) . "\n";
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
