<?php

declare(strict_types=1);

namespace Pathlock;

/**
 * The engine's way to its Redis deployment: one standalone server
 * (StandaloneConnection, a phpredis \Redis) or a Redis Cluster
 * (ClusterConnection, a phpredis \RedisCluster). LockEngine sends every
 * command through it, naming where the command goes:
 * - a key: the server that serves the key's slot (every function call is
 *   routed by its namespace's first key; the nine keys share one hash tag,
 *   so one slot);
 * - a master from masters(): that very master (FUNCTION LOAD reaches each);
 * - null: any one server (the contract, TIME).
 * A standalone connection has one server and ignores the route.
 *
 * To support another deployment, implement this interface and choose it in
 * LockEngine's constructor (and LockEngine::connect for its URL).
 */
interface Connection
{
    /**
     * Sends one command; its reply, or false for an error reply (lastError()
     * says which).
     *
     * @param string|array{string,int}|null $route a key, a master from masters(), or null
     * @throws \RedisException when no reply came (a broken connection, a read timeout)
     */
    public function command(string|array|null $route, string ...$words): mixed;

    /** The last error reply ('' when the last command succeeded). */
    public function lastError(): string;

    /**
     * Every master, each a route for command(); [null] for a standalone server.
     *
     * @return list<array{string,int}|null>
     */
    public function masters(): array;

    /** The read timeout in seconds (0: none). */
    public function readTimeout(): float;

    /** Sets the read timeout for the next commands; false when the connection cannot change it. */
    public function setReadTimeout(float $seconds): bool;

    /** Drops the connections (after a lost reply); the next command opens them again. */
    public function drop(): void;

    /**
     * Subscribes to a namespace's wake-up channel `pl:{NS}:wake` on the
     * server that publishes it (on a Cluster, the master of its slot).
     *
     * @throws Exception\BackendException when the subscription cannot be made
     */
    public function subscribe(string $channel): WakeSubscription;
}
