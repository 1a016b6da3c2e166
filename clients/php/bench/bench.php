<?php

declare(strict_types=1);

// Acquire + release pairs against one Redis server: pairs/s and the median
// (p50) of one pair, for the PHP client in this process, and, over the shell
// line protocol, for the PHP driver and the C++ engine (`pathlock shell
// --backend redis`) on the same server in the same run. Each pair takes and
// gives back `upload` on its own path in a fresh namespace.
//
//   php bench/bench.php --redis URL [--library FILE] [--pairs N] [--callers N] [--cli PATHLOCK]
//                       [--namespace NS] [--no-drivers]
//
// With --callers above 1 (or --no-drivers) only the in-process line is
// measured: --callers processes at once, --pairs pairs each.
//
// Numbers are for comparing clients on one machine, never assertions.

require dirname(__DIR__) . '/src/autoload.php';

use Pathlock\Library;
use Pathlock\LockEngine;

$opt = getopt('', ['redis:', 'library:', 'pairs:', 'cli:', 'callers:', 'worker:', 'namespace:', 'worker-namespace:', 'no-drivers']);
$url = $opt['redis'] ?? 'redis://127.0.0.1:6379';
$library = Library::fromFile($opt['library'] ?? (getenv('PATHLOCK_LIBRARY') ?: 'pathlock_library.lua'));
$pairs = (int) ($opt['pairs'] ?? 2000);
$callers = max(1, (int) ($opt['callers'] ?? 1));
$cli = $opt['cli'] ?? (getenv('PATHLOCK_CLI') ?: '');

/** @param list<float> $ns one duration per pair, nanoseconds */
function report(string $who, array $ns, float $totalNs): void
{
    sort($ns);
    printf("%-28s %8.0f pairs/s   p50 %7.1f us   p99 %7.1f us   (%d pairs)\n",
        $who, count($ns) / ($totalNs / 1e9), $ns[intdiv(count($ns), 2)] / 1e3, $ns[(int) floor(count($ns) * 0.99)] / 1e3, count($ns));
}

// 1. The PHP client, in process: --callers processes (PHP has no threads),
// each with its own engine; caller c runs --pairs pairs of `upload` on
// /bench/c<c>/<i % 1000>/f (the workload of every client's line in
// tools/dev/clients_bench.py). A worker (--worker C) warms up, waits for a
// line on stdin, runs its pairs and prints their durations as JSON.
/** @return list<float> one duration per pair, nanoseconds */
function callerPairs(LockEngine $engine, string $ns, int $caller, int $pairs): array
{
    $times = [];
    for ($i = 0; $i < $pairs; $i++) {
        $t = hrtime(true);
        $path = "/bench/c$caller/" . ($i % 1000) . '/f';
        $g = $engine->acquire($ns, 'bench', 'upload', [$path])->grant ?? throw new RuntimeException('refused');
        $engine->release($ns, $g->id, $g->token);
        $times[] = hrtime(true) - $t;
    }
    return $times;
}

/** @return array{0: list<float>, 1: float} the pairs' durations and the wall time, nanoseconds */
function inProcess(array $argv, int $callers, string $ns): array
{
    $workers = [];
    for ($c = 0; $c < $callers; $c++) {
        $cmd = array_merge([PHP_BINARY], $argv, ['--worker', (string) $c, '--worker-namespace', $ns]);
        $proc = proc_open($cmd, [0 => ['pipe', 'r'], 1 => ['pipe', 'w']], $pipes);
        $workers[] = [$proc, $pipes];
    }
    foreach ($workers as [, $pipes]) {   // each says it is warm
        if (trim((string) fgets($pipes[1])) !== 'ready') {
            throw new RuntimeException('a worker did not start');
        }
    }
    $start = hrtime(true);
    foreach ($workers as [, $pipes]) {
        fwrite($pipes[0], "go\n");
        fflush($pipes[0]);
    }
    $times = [];
    foreach ($workers as [$proc, $pipes]) {
        $times = array_merge($times, json_decode((string) stream_get_contents($pipes[1]), true, 512, JSON_THROW_ON_ERROR));
        fclose($pipes[0]);
        fclose($pipes[1]);
        proc_close($proc);
    }
    return [$times, hrtime(true) - $start];
}

if (isset($opt['worker'])) {
    $engine = LockEngine::connect($url, $library);
    $caller = (int) $opt['worker'];
    callerPairs($engine, $opt['worker-namespace'] . '-warm', $caller, min($pairs, 1000));
    echo "ready\n";
    fgets(STDIN);
    echo json_encode(callerPairs($engine, $opt['worker-namespace'], $caller, $pairs)), "\n";
    exit(0);
}
$ns = $opt['namespace'] ?? 'bench-php-' . bin2hex(random_bytes(4));
[$times, $wall] = inProcess(array_merge([__FILE__], array_slice($argv, 1)), $callers, $ns);
report("php client (in process, $callers callers)", $times, $wall);
if ($callers > 1 || isset($opt['no-drivers'])) {
    exit(0);
}

// 2. Drivers over the line protocol: the same pairs, one line per call.
function lines(string $who, array $cmd, int $pairs): void
{
    $p = proc_open($cmd, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
    $ask = function (string $line) use ($pipes): array {
        fwrite($pipes[0], $line . "\n");
        fflush($pipes[0]);
        $answer = fgets($pipes[1]);
        if ($answer === false) {
            throw new RuntimeException('the driver ended');
        }
        return json_decode($answer, true, 512, JSON_THROW_ON_ERROR);
    };
    for ($i = 0; $i < 100; $i++) {
        $g = $ask("acquire bench upload /w/$i");
        $ask("release {$g['id']} {$g['token']}");
    }
    $times = [];
    $start = hrtime(true);
    for ($i = 0; $i < $pairs; $i++) {
        $t = hrtime(true);
        $g = $ask("acquire bench upload /p/$i");
        if (!$g['granted']) {
            throw new RuntimeException('refused');
        }
        $ask("release {$g['id']} {$g['token']}");
        $times[] = hrtime(true) - $t;
    }
    report($who, $times, hrtime(true) - $start);
    fclose($pipes[0]);
    proc_close($p);
}

lines('php driver (line protocol)', [PHP_BINARY, dirname(__DIR__) . '/bin/pathlock-php-shell', '--redis', $url,
    '--namespace', 'bench-phpd-' . bin2hex(random_bytes(4)), '--library', $opt['library'] ?? (string) getenv('PATHLOCK_LIBRARY')], $pairs);
if ($cli !== '') {
    lines('c++ shell (line protocol)', [$cli, 'shell', '--backend', 'redis', '--redis', $url,
        '--namespace', 'bench-cpp-' . bin2hex(random_bytes(4))], $pairs);
}
