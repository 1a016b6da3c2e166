<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;
use Pathlock\Exception\InvalidRequestException;

/**
 * Where a Redis server is and how to log in: from a `redis://` or
 * `rediss://` URL (`redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`), or read
 * back from a connected \Redis. The engine uses it to open the dedicated
 * connection of the wake-up subscription.
 *
 * $tlsOptions: PHP's SSL context options (https://www.php.net/manual/en/context.ssl.php:
 * `cafile`, `local_cert`, `local_pk`, `verify_peer`, `peer_name`, ...), used
 * for a `rediss://` endpoint on every socket: the command connection
 * (phpredis's `stream` context) and the wake-up subscription alike.
 */
final readonly class Endpoint
{
    public function __construct(
        public string $host,
        public int $port = 6379,
        public bool $tls = false,
        public ?string $user = null,
        public ?string $password = null,
        public int $db = 0,
        public float $connectTimeout = 2.0,
        public float $commandTimeout = 2.0,
        public array $tlsOptions = [],
    ) {
    }

    /** @param array<string,mixed> $tlsOptions SSL context options for rediss:// */
    public static function fromUrl(string $url, float $connectTimeout = 2.0, float $commandTimeout = 2.0, array $tlsOptions = []): self
    {
        $parts = parse_url($url);
        $scheme = is_array($parts) ? strtolower($parts['scheme'] ?? '') : '';
        if (!is_array($parts) || !in_array($scheme, ['redis', 'rediss'], true) || !isset($parts['host'])) {
            throw new InvalidRequestException("Redis URL '$url' is not redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (or rediss://)");
        }
        $db = 0;
        $path = trim($parts['path'] ?? '', '/');
        if ($path !== '') {
            if (preg_match('/\A\d{1,5}\z/', $path) !== 1) {
                throw new InvalidRequestException("Redis URL '$url': the database must be a number");
            }
            $db = (int) $path;
        }
        $user = isset($parts['user']) && $parts['user'] !== '' ? rawurldecode($parts['user']) : null;
        $password = isset($parts['pass']) ? rawurldecode($parts['pass']) : null;
        if ($user !== null && $password === null) {  // redis://PASSWORD@host
            [$user, $password] = [null, $user];
        }
        return new self(
            trim($parts['host'], '[]'),
            (int) ($parts['port'] ?? 6379),
            $scheme === 'rediss',
            $user,
            $password,
            $db,
            $connectTimeout,
            $commandTimeout,
            $tlsOptions,
        );
    }

    /**
     * The seeds of a URL that names several nodes of a Redis Cluster,
     * `redis://[[USER]:PASSWORD@]HOST:PORT,HOST:PORT[,...]` (or `rediss://`;
     * the login and TLS options hold for every node); a URL of one host is one
     * endpoint, as fromUrl() reads it.
     *
     * @param array<string,mixed> $tlsOptions
     * @return non-empty-list<self>
     */
    public static function seedsFromUrl(string $url, float $connectTimeout = 2.0, float $commandTimeout = 2.0, array $tlsOptions = []): array
    {
        if (preg_match('#\A([A-Za-z]+://)([^@/]*@)?([^/@]*)(/.*)?\z#s', $url, $m) !== 1 || !str_contains($m[3], ',')) {
            return [self::fromUrl($url, $connectTimeout, $commandTimeout, $tlsOptions)];
        }
        $seeds = [];
        foreach (explode(',', $m[3]) as $host) {
            if ($host === '') {
                throw new InvalidRequestException("Redis URL '$url' has an empty host between commas");
            }
            $seeds[] = self::fromUrl($m[1] . $m[2] . $host . ($m[4] ?? ''), $connectTimeout, $commandTimeout, $tlsOptions);
        }
        return $seeds;
    }

    /** The same login, TLS and timeouts at another address. */
    public function withAddress(string $host, int $port): self
    {
        return new self($host, $port, $this->tls, $this->user, $this->password, $this->db,
            $this->connectTimeout, $this->commandTimeout, $this->tlsOptions);
    }

    /**
     * The endpoint a connected phpredis client talks to. phpredis does not
     * tell the SSL context it was connected with: give $tlsOptions again (or pass
     * an Endpoint to LockEngine's constructor) when it uses one.
     *
     * @param array<string,mixed> $tlsOptions
     */
    public static function fromRedis(\Redis $redis, array $tlsOptions = []): self
    {
        $host = (string) $redis->getHost();
        $tls = false;
        if (preg_match('#\A(tls|ssl)://#i', $host, $m) === 1) {
            $tls = true;
            $host = substr($host, strlen($m[0]));
        } elseif (str_starts_with(strtolower($host), 'tcp://')) {
            $host = substr($host, 6);
        }
        $auth = $redis->getAuth();
        $user = null;
        $password = null;
        if (is_array($auth)) {
            [$user, $password] = count($auth) >= 2 ? [(string) $auth[0], (string) $auth[1]] : [null, (string) $auth[0]];
        } elseif (is_string($auth) && $auth !== '') {
            $password = $auth;
        }
        $timeout = (float) $redis->getTimeout();
        $read = (float) $redis->getReadTimeout();
        return new self(
            $host,
            (int) $redis->getPort(),
            $tls,
            $user,
            $password,
            (int) $redis->getDBNum(),
            $timeout > 0 ? $timeout : 2.0,
            $read > 0 ? $read : 2.0,
            $tlsOptions,
        );
    }

    /** A new phpredis connection to this endpoint, logged in. */
    public function connect(): \Redis
    {
        $redis = new \Redis();
        try {
            $ok = @$redis->connect(   // a TLS failure is a warning too: the exception says it
                ($this->tls ? 'tls://' : '') . $this->host,
                $this->port,
                $this->connectTimeout,
                null,
                0,
                $this->commandTimeout,
                $this->tlsOptions ? ['stream' => $this->tlsOptions] : [],
            );
            if (!$ok) {
                throw new BackendException("redis at {$this->host}:{$this->port}: cannot connect");
            }
            if ($this->password !== null) {
                $redis->auth($this->user !== null ? [$this->user, $this->password] : $this->password);
            }
            if ($this->db !== 0) {
                $redis->select($this->db);
            }
        } catch (\RedisException $e) {
            throw new BackendException("redis at {$this->host}:{$this->port}: {$e->getMessage()}", 0, $e);
        }
        return $redis;
    }
}
