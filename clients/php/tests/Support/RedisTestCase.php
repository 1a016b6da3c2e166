<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

use Pathlock\Library;
use Pathlock\LockEngine;
use PHPUnit\Framework\TestCase;

/** A test class with its own redis-server, the library loaded on first use, and a fresh namespace per test. */
abstract class RedisTestCase extends TestCase
{
    protected static ?RedisServer $server = null;
    protected LockEngine $engine;
    protected string $ns;

    public static function setUpBeforeClass(): void
    {
        static::$server = new RedisServer();
    }

    public static function tearDownAfterClass(): void
    {
        static::$server?->stop();
        static::$server = null;
    }

    protected function setUp(): void
    {
        $this->engine = LockEngine::connect(static::$server->url, self::library());
        $this->ns = 'php-' . bin2hex(random_bytes(5));
    }

    protected static function library(): Library
    {
        return Library::fromFile((string) getenv('PATHLOCK_LIBRARY'));
    }

    /** The test-vector folder: $PATHLOCK_VECTORS_DIR, else `vectors` beside the library file. */
    protected static function vectors(string $file): array
    {
        $dir = getenv('PATHLOCK_VECTORS_DIR') ?: dirname((string) getenv('PATHLOCK_LIBRARY')) . '/vectors';
        $path = "$dir/$file";
        if (!is_file($path)) {
            throw new \RuntimeException("set PATHLOCK_VECTORS_DIR to the folder holding $file ('$path' is missing)");
        }
        return json_decode((string) file_get_contents($path), true, 512, JSON_THROW_ON_ERROR);
    }
}
