<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * A real process speaking the shell line protocol (the PHP driver or the
 * C++ `pathlock shell`): lines in, one JSON object per line out.
 */
final class LineProcess
{
    /** @var resource */
    private $process;
    /** @var array<int, resource> */
    private array $pipes;
    private string $buffer = '';

    /** @param list<string> $command */
    public function __construct(array $command, ?array $env = null)
    {
        $process = proc_open($command, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        if ($process === false) {
            throw new \RuntimeException('cannot start ' . implode(' ', $command));
        }
        $this->process = $process;
        $this->pipes = $pipes;
        stream_set_blocking($this->pipes[1], false);
    }

    public static function phpShell(string $url, string $namespace): self
    {
        return new self([PHP_BINARY, dirname(__DIR__, 2) . '/bin/pathlock-php-shell', '--redis', $url, '--namespace', $namespace]);
    }

    public static function cppShell(string $url, string $namespace): self
    {
        return new self([self::cli(), 'shell', '--backend', 'redis', '--redis', $url, '--namespace', $namespace]);
    }

    /** The C++ CLI: $PATHLOCK_CLI, else the reference build's. */
    public static function cli(): string
    {
        $cli = getenv('PATHLOCK_CLI') ?: '/work/ref/bin/pathlock';
        if (!is_executable($cli)) {
            throw new \RuntimeException("set PATHLOCK_CLI to the pathlock program ('$cli' is not executable)");
        }
        return $cli;
    }

    public function send(string $line): void
    {
        fwrite($this->pipes[0], $line . "\n");
        fflush($this->pipes[0]);
    }

    /** The next answer (a failure, not a timing check, if none comes within $seconds). */
    public function read(float $seconds = 30.0): array
    {
        $until = microtime(true) + $seconds;
        while (($nl = strpos($this->buffer, "\n")) === false) {
            $left = $until - microtime(true);
            if ($left <= 0) {
                throw new \RuntimeException('no answer within ' . $seconds . ' s; stderr: ' . $this->stderr());
            }
            $read = [$this->pipes[1]];
            $w = $e = null;
            stream_select($read, $w, $e, (int) $left, (int) (fmod($left, 1) * 1e6));
            $chunk = fread($this->pipes[1], 65536);
            if ($chunk === '' && feof($this->pipes[1])) {
                throw new \RuntimeException('the process ended; stderr: ' . $this->stderr());
            }
            $this->buffer .= (string) $chunk;
        }
        $line = substr($this->buffer, 0, $nl);
        $this->buffer = substr($this->buffer, $nl + 1);
        return json_decode($line, true, 512, JSON_THROW_ON_ERROR);
    }

    /** What the process wrote to stderr so far; never blocks (a process that gives no answer may still run). */
    private function stderr(): string
    {
        stream_set_blocking($this->pipes[2], false);
        return (string) stream_get_contents($this->pipes[2]);
    }

    public function ask(string $line): array
    {
        $this->send($line);
        return $this->read();
    }

    /** Ends the input (the process reads end of file). */
    public function closeInput(): void
    {
        if (is_resource($this->pipes[0])) {
            fclose($this->pipes[0]);
        }
    }

    /** Closes stdin and returns the exit status. */
    public function close(): int
    {
        if (is_resource($this->pipes[0])) {
            fclose($this->pipes[0]);
        }
        $status = 0;
        for ($i = 0; $i < 1000; $i++) {
            $st = proc_get_status($this->process);
            if (!$st['running']) {
                $status = $st['exitcode'];
                break;
            }
            usleep(10000);
        }
        foreach ([1, 2] as $p) {
            if (is_resource($this->pipes[$p])) {
                fclose($this->pipes[$p]);
            }
        }
        proc_close($this->process);
        return $status;
    }

    public function __destruct()
    {
        if (is_resource($this->process)) {
            proc_terminate($this->process);
            $this->close();
        }
    }
}
