<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * @internal The server's clock as this client estimates it, for an
 * acquire's deadline_ms (protocol 4.2, docs/lua-protocol.md#deadlines):
 * read with TIME when the contract is read and again every 30 s, corrected
 * by a `late` reply. Without TIME rights there is no estimate and
 * deadline_ms is sent empty.
 */
final class ServerClock
{
    private const REFRESH_MS = 30000;

    /** @var array{float, float}|null [s0 (the server's ms since the epoch), m0 (Transport::nowMs() when read)] */
    private ?array $reading = null;
    private float $readAt = -INF;

    public function __construct(private readonly Transport $transport)
    {
    }

    /** Reads the server's clock now (TIME). */
    public function read(): void
    {
        $this->readAt = Transport::nowMs();
        $this->reading = $this->time();
    }

    /** Reads it again when the last reading is 30 s old, waiting at most $budgetMs for TIME's answer. */
    public function refresh(float $budgetMs): void
    {
        if (Transport::nowMs() - $this->readAt >= self::REFRESH_MS) {
            $this->readAt = Transport::nowMs();
            $this->reading = $this->transport->withReadTimeout($budgetMs, fn(): ?array => $this->time());
        }
    }

    /** The server said its clock is at $serverNowMs (a `late` reply). */
    public function correct(float $serverNowMs): void
    {
        $this->reading = [$serverNowMs, Transport::nowMs()];
    }

    /**
     * deadline_ms for a call that waits $budget ms from now: the server's
     * clock as last read plus the time since, plus the budget; '' when
     * TIME is not allowed (or there is no bound).
     */
    public function deadline(float $budget): string
    {
        if ($this->reading === null || is_infinite($budget)) {
            return '';
        }
        [$s0, $m0] = $this->reading;
        return sprintf('%.0f', floor($s0 + (Transport::nowMs() - $m0) + $budget));
    }

    /** @return array{float, float}|null [the server's TIME in ms, nowMs() at its arrival]; null without TIME rights */
    private function time(): ?array
    {
        $start = Transport::nowMs();
        try {
            $t = $this->transport->connection->command(null, 'TIME');
        } catch (\RedisException $e) {
            throw $this->transport->lostReply('TIME', $start, $e);
        }
        if (!is_array($t) || count($t) !== 2) {
            return null;
        }
        return [(float) $t[0] * 1000 + intdiv((int) $t[1], 1000), Transport::nowMs()];
    }
}
