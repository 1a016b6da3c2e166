<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * A Connection to the master a set of sentinels names
 * (`redis-sentinel://…#MASTER`, SentinelDiscovery), found again after a
 * failover, as the Go client does:
 * - a command answered `READONLY` (the old master, now a replica, refused a
 *   write: the command did not run; phpredis throws this reply) makes it ask
 *   the sentinels and send the command once more, to the master they name now;
 * - a command that got no reply (a broken connection, a read timeout) is
 *   thrown as before (it may have run), and the next command asks the
 *   sentinels first and connects to the master they name.
 * Each look costs one question to a sentinel and, when the master moved, a
 * connect: both bounded by the engine's connect and command timeouts.
 * The wake-up subscriptions follow the master found last.
 */
final class SentinelConnection implements Connection
{
    private ?StandaloneConnection $current = null;
    private ?float $readTimeout = null;

    /** @param array<string,mixed> $tlsOptions for the master (the sentinels take none) */
    private function __construct(
        private readonly string $url,
        private readonly float $connectTimeout,
        private readonly float $commandTimeout,
        private readonly array $tlsOptions,
    ) {
    }

    /**
     * Connects to the master the sentinels of $url name.
     *
     * @param array<string,mixed> $tlsOptions
     * @throws Exception\InvalidRequestException a malformed URL
     * @throws Exception\BackendException no sentinel named the master, or it cannot be reached
     */
    public static function open(string $url, float $connectTimeout, float $commandTimeout, array $tlsOptions): self
    {
        $c = new self($url, $connectTimeout, $commandTimeout, $tlsOptions);
        $c->connection();
        return $c;
    }

    public function command(string|array|null $route, string ...$words): mixed
    {
        try {
            return $this->send($words);
        } catch (\RedisException $e) {
            if (!str_starts_with($e->getMessage(), 'READONLY')) {   // phpredis throws this error reply
                throw $e;
            }
        }
        return $this->send($words);   // it did not run: once more, to the master named now
    }

    public function lastError(): string
    {
        return $this->current?->lastError() ?? '';
    }

    public function masters(): array
    {
        return [null];
    }

    public function readTimeout(): float
    {
        return $this->readTimeout ?? $this->commandTimeout;
    }

    public function setReadTimeout(float $seconds): bool
    {
        $this->readTimeout = $seconds;
        return $this->current === null || $this->current->setReadTimeout($seconds);
    }

    public function drop(): void
    {
        $this->forget();
    }

    public function subscribe(string $channel): WakeSubscription
    {
        return $this->connection()->subscribe($channel);
    }

    /**
     * @param list<string> $words
     * @throws \RedisException no reply came (the next command looks for the master again)
     */
    private function send(array $words): mixed
    {
        try {
            return $this->connection()->command(null, ...$words);
        } catch (\RedisException $e) {
            $this->forget();
            throw $e;
        }
    }

    /** The connection to the master, found through the sentinels when there is none. */
    private function connection(): StandaloneConnection
    {
        if ($this->current === null) {
            $master = SentinelDiscovery::master($this->url, $this->connectTimeout, $this->commandTimeout, $this->tlsOptions);
            $this->current = new StandaloneConnection($master->connect(), $master);
            if ($this->readTimeout !== null) {
                $this->current->setReadTimeout($this->readTimeout);
            }
        }
        return $this->current;
    }

    private function forget(): void
    {
        $this->current?->drop();
        $this->current = null;
    }
}
