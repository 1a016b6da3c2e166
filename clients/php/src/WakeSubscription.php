<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\BackendException;

/**
 * The wake-up subscription of a waiting acquire: a dedicated connection
 * (never shared with calls) `SSUBSCRIBE`d to `pl:{NS}:wake`.
 *
 * phpredis 5.3 (Debian 12) has no `ssubscribe`, and its `subscribe` runs a
 * callback loop that only returns when the callback unsubscribes, with no
 * timeout of its own; `rawCommand('SSUBSCRIBE', ...)` returns the first
 * confirmation but there is no call to read the messages that follow. So
 * this class speaks RESP itself on a PHP stream socket: it sends AUTH and
 * SSUBSCRIBE, then waits for messages with stream_select(), which bounds
 * every wait by the re-check, the conflict's expiry and the deadline, and
 * lets the caller watch other streams (a driver's stdin) at the same time.
 */
final class WakeSubscription
{
    /** @var resource */
    private $socket;
    private string $buffer = '';
    /** @var list<string> payloads read but not handed out yet */
    private array $pending = [];
    private bool $broken = false;

    /** @param resource $socket */
    private function __construct($socket)
    {
        $this->socket = $socket;
    }

    /** @throws BackendException when the connection, the login or the subscription fails */
    public static function open(Endpoint $endpoint, string $channel): self
    {
        $address = ($endpoint->tls ? 'tls' : 'tcp') . '://' .
            (str_contains($endpoint->host, ':') ? "[{$endpoint->host}]" : $endpoint->host) . ':' . $endpoint->port;
        $errno = 0;
        $errstr = '';
        // The same SSL context options as the command connection (Endpoint::$tlsOptions).
        $context = stream_context_create($endpoint->tlsOptions ? ['ssl' => $endpoint->tlsOptions] : []);
        $socket = @stream_socket_client($address, $errno, $errstr, $endpoint->connectTimeout, STREAM_CLIENT_CONNECT, $context);
        if ($socket === false) {
            throw new BackendException("wake-up subscription: cannot connect to $address: $errstr");
        }
        stream_set_timeout($socket, (int) ceil($endpoint->commandTimeout));
        $sub = new self($socket);
        try {
            if ($endpoint->password !== null) {
                $auth = $endpoint->user !== null ? ['AUTH', $endpoint->user, $endpoint->password] : ['AUTH', $endpoint->password];
                $sub->send($auth);
                $reply = $sub->readReply($endpoint->commandTimeout);
                if ($reply instanceof RespError) {
                    throw new BackendException("wake-up subscription: AUTH: {$reply->message}");
                }
            }
            $sub->send(['SSUBSCRIBE', $channel]);
            $reply = $sub->readReply($endpoint->commandTimeout);
            if ($reply instanceof RespError) {
                throw new BackendException("wake-up subscription: SSUBSCRIBE: {$reply->message}");
            }
            if (!is_array($reply) || ($reply[0] ?? null) !== 'ssubscribe') {
                throw new BackendException('wake-up subscription: unexpected reply to SSUBSCRIBE');
            }
        } catch (BackendException $e) {
            $sub->close();
            throw $e;
        }
        stream_set_blocking($socket, false);
        return $sub;
    }

    /** @return resource the socket, for stream_select() beside other streams */
    public function stream()
    {
        return $this->socket;
    }

    /** Whether messages were already read and wait to be taken. */
    public function hasPending(): bool
    {
        return $this->pending !== [];
    }

    public function isBroken(): bool
    {
        return $this->broken;
    }

    /**
     * The payloads that arrived, after reading what the socket has now
     * (call it once stream_select() says the socket is readable, or when
     * hasPending()). Marks the subscription broken on end of stream.
     *
     * @return list<string>
     */
    public function take(): array
    {
        if (!$this->broken) {
            while (true) {
                $chunk = @fread($this->socket, 65536);
                if ($chunk === false || ($chunk === '' && feof($this->socket))) {
                    $this->broken = true;
                    break;
                }
                if ($chunk === '') {
                    break;
                }
                $this->buffer .= $chunk;
            }
            while (($parsed = Resp::parse($this->buffer)) !== null) {
                [$value, $used] = $parsed;
                $this->buffer = substr($this->buffer, $used);
                if (is_array($value) && ($value[0] ?? null) === 'smessage' && isset($value[2]) && is_string($value[2])) {
                    $this->pending[] = $value[2];
                } elseif (is_array($value) && ($value[0] ?? null) === 'sunsubscribe') {
                    // The server ended it: on a Cluster the slot left this master.
                    $this->broken = true;
                }
            }
        }
        $out = $this->pending;
        $this->pending = [];
        return $out;
    }

    public function close(): void
    {
        if (is_resource($this->socket)) {
            @fclose($this->socket);
        }
        $this->broken = true;
    }

    public function __destruct()
    {
        $this->close();
    }

    /** @param list<string> $words */
    private function send(array $words): void
    {
        $data = Resp::command($words);
        while ($data !== '') {
            $n = @fwrite($this->socket, $data);
            if ($n === false || $n === 0) {
                throw new BackendException('wake-up subscription: write failed');
            }
            $data = substr($data, $n);
        }
    }

    /** One reply, read in blocking mode with a timeout. */
    private function readReply(float $timeout): mixed
    {
        $until = microtime(true) + $timeout;
        while (($parsed = Resp::parse($this->buffer)) === null) {
            $left = $until - microtime(true);
            if ($left <= 0) {
                throw new BackendException('wake-up subscription: no reply in time');
            }
            $read = [$this->socket];
            $write = $except = null;
            if (@stream_select($read, $write, $except, (int) $left, (int) (fmod($left, 1.0) * 1e6)) === false) {
                throw new BackendException('wake-up subscription: select failed');
            }
            if ($read === []) {
                continue;
            }
            $chunk = @fread($this->socket, 65536);
            if ($chunk === false || ($chunk === '' && feof($this->socket))) {
                throw new BackendException('wake-up subscription: connection closed');
            }
            $this->buffer .= $chunk;
        }
        [$value, $used] = $parsed;
        $this->buffer = substr($this->buffer, $used);
        return $value;
    }
}
