<?php

declare(strict_types=1);

namespace Pathlock\Tests;

use Pathlock\Tests\Support\LineProcess;
use Pathlock\Tests\Support\RedisTestCase;

/**
 * docs/php.md's example, run as written: the page shows
 * examples/file_locking.php unchanged, its matrix lints, its library is
 * built with pathlock-matrixc, and the program runs against the server.
 */
final class ExampleTest extends RedisTestCase
{
    private const ROOT = __DIR__ . '/..';

    public function testTheDocShowsTheExampleUnchanged(): void
    {
        $doc = (string) file_get_contents(self::ROOT . '/../../docs/php.md');
        $this->assertStringContainsString("```php\n" . file_get_contents(self::ROOT . '/examples/file_locking.php') . "```", $doc);
        $this->assertStringContainsString("```json\n" . file_get_contents(self::ROOT . '/examples/file-locks.json') . "```", $doc);
    }

    public function testTheExampleRuns(): void
    {
        $matrix = self::ROOT . '/examples/file-locks.json';
        exec(escapeshellarg(LineProcess::cli()) . ' matrix lint ' . escapeshellarg($matrix) . ' 2>&1', $lint, $status);
        $this->assertSame(0, $status, implode("\n", $lint));

        $matrixc = getenv('PATHLOCK_MATRIXC') ?: '/work/ref/bin/pathlock-matrixc';
        $this->assertTrue(is_executable($matrixc), "set PATHLOCK_MATRIXC to pathlock-matrixc ('$matrixc')");
        $lua = sys_get_temp_dir() . '/file-locks-' . bin2hex(random_bytes(4)) . '.lua';
        exec(escapeshellarg($matrixc) . ' --json ' . escapeshellarg($matrix) . ' --lua ' . escapeshellarg($lua) . ' 2>&1', $out, $status);
        $this->assertSame(0, $status, implode("\n", $out));
        try {
            exec(escapeshellarg(PHP_BINARY) . ' ' . escapeshellarg(self::ROOT . '/examples/file_locking.php') . ' '
                . escapeshellarg(static::$server->url) . ' ' . escapeshellarg($lua) . ' 2>&1', $run, $status);
            $this->assertSame(0, $status, implode("\n", $run));
            $this->assertSame([
                "alice may not write while bob reads: refused: target /files/report.odt is locked by shared 'bob' on /files/report.odt (same)",
                'exclusive on /files/report.odt: true',
                'locks left: 0',
            ], $run);
        } finally {
            @unlink($lua);
        }
    }
}
