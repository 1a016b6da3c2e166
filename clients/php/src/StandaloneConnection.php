<?php

declare(strict_types=1);

namespace Pathlock;

/** A Connection to one Redis server through a phpredis \Redis. */
final class StandaloneConnection implements Connection
{
    private string $error = '';

    /** @param Endpoint|null $wakeEndpoint where to subscribe; default: the server $redis talks to */
    public function __construct(private readonly \Redis $redis, private ?Endpoint $wakeEndpoint = null)
    {
    }

    public function command(string|array|null $route, string ...$words): mixed
    {
        $this->redis->clearLastError();
        $r = $this->redis->rawCommand(...$words);
        $this->error = $r === false ? (string) ($this->redis->getLastError() ?? '') : '';
        return $r;
    }

    public function lastError(): string
    {
        return $this->error;
    }

    public function masters(): array
    {
        return [null];
    }

    public function readTimeout(): float
    {
        return (float) $this->redis->getReadTimeout();
    }

    public function setReadTimeout(float $seconds): bool
    {
        return $this->redis->setOption(\Redis::OPT_READ_TIMEOUT, $seconds);
    }

    public function drop(): void
    {
        try {
            $this->redis->close();
        } catch (\RedisException) {
        }
    }

    public function subscribe(string $channel): WakeSubscription
    {
        $this->wakeEndpoint ??= Endpoint::fromRedis($this->redis);
        return WakeSubscription::open($this->wakeEndpoint, $channel);
    }
}
