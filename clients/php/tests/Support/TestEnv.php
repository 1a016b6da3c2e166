<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

/**
 * The one test launcher (tests/support/pathlock-testenv; tests/README.md)
 * as a child process: `pathlock-testenv KIND OPTIONS -- ARGS` started, its
 * one JSON line read ($info: ports, pids, url, dirs), stopped by closing
 * its stdin (it stops its servers and removes their directory). The
 * launcher picks free ports (a Cluster's and a Sentinel deployment's leave
 * room for the bus port, port + 10000), tries others when one was taken,
 * and waits, within its limits, until every server answers; its error,
 * when it cannot, is on stderr. $PATHLOCK_TESTENV, else this source tree's.
 */
final class TestEnv
{
    /** @var resource */
    private $process;
    /** @var array<int, resource> */
    private array $pipes;
    public readonly array $info;

    /**
     * @param list<string> $options the kind's options (e.g. `--masters`, `3`)
     * @param list<string> $args more redis-server arguments
     */
    public function __construct(string $kind, array $options = [], array $args = [])
    {
        $launcher = getenv('PATHLOCK_TESTENV') ?: dirname(__DIR__, 4) . '/tests/support/pathlock-testenv';
        $process = proc_open([$launcher, $kind, ...$options, '--', ...$args], [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR], $pipes);
        if ($process === false) {
            throw new \RuntimeException("cannot start $launcher");
        }
        $this->process = $process;
        $this->pipes = $pipes;
        $line = fgets($this->pipes[1]);
        if ($line === false) {
            $this->stop();
            throw new \RuntimeException("pathlock-testenv $kind did not start its servers (see stderr)");
        }
        $this->info = json_decode($line, true, 512, JSON_THROW_ON_ERROR);
    }

    /** The JSON line's entry of server $name (its port, pid, dir, log). */
    public function server(string $name): array
    {
        foreach ($this->info['servers'] as $s) {
            if ($s['name'] === $name) {
                return $s;
            }
        }
        throw new \RuntimeException("pathlock-testenv started no server named $name");
    }

    /** One stdin command (`restart NAME [ARG...]`, `stop NAME`): its JSON answer. */
    public function command(string $line): array
    {
        fwrite($this->pipes[0], $line . "\n");
        fflush($this->pipes[0]);
        $answer = fgets($this->pipes[1]);
        $parsed = $answer === false ? ['error' => 'the launcher ended'] : json_decode($answer, true, 512, JSON_THROW_ON_ERROR);
        if (isset($parsed['error'])) {
            throw new \RuntimeException("pathlock-testenv: $line: {$parsed['error']}");
        }
        return $parsed;
    }

    /** Closes its stdin and waits until it has stopped everything. */
    public function stop(): void
    {
        if (!is_resource($this->process)) {
            return;
        }
        foreach ($this->pipes as $p) {
            if (is_resource($p)) {
                fclose($p);
            }
        }
        proc_close($this->process);   // waits for the launcher's exit
    }

    public function __destruct()
    {
        $this->stop();
    }
}
