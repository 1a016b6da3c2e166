<?php

declare(strict_types=1);

// A file service's locking provider (shared/exclusive locks per path, as
// Nextcloud's ILockingProvider takes them) on pathlock, with the small matrix
// examples/file-locks.json. The complete example of docs/php.md; the PHP
// test suite runs it:  php examples/file_locking.php REDIS_URL LIBRARY_FILE
// (LIBRARY_FILE: `pathlock-matrixc --json file-locks.json --lua LIBRARY_FILE`).

require dirname(__DIR__) . '/src/autoload.php';   // or Composer's vendor/autoload.php

use Pathlock\Exception\LockRefusedException;
use Pathlock\Grant;
use Pathlock\Library;
use Pathlock\LockEngine;

final class PathlockLockingProvider
{
    public const LOCK_SHARED = 1;
    public const LOCK_EXCLUSIVE = 2;
    private const OPS = [self::LOCK_SHARED => 'shared', self::LOCK_EXCLUSIVE => 'exclusive'];

    /** @var array<string, Grant> the locks this request holds, by "type:path" */
    private array $held = [];

    public function __construct(
        private readonly LockEngine $engine,
        private readonly string $namespace,   // one per tenant / instance
        private readonly string $owner,       // shown in listings, never a proof
        private readonly int $ttlMs = 3600000,
        private readonly int $waitMs = 0,     // how long to wait for a conflicting lock
    ) {
    }

    /** @throws LockRefusedException when another request holds a conflicting lock */
    public function acquireLock(string $path, int $type): void
    {
        $key = "$type:$path";
        // Taking a lock this request already holds: reentry by proof (holds + 1).
        $r = $this->engine->acquire($this->namespace, $this->owner, self::OPS[$type], [$path],
            ttlMs: $this->ttlMs, waitMs: isset($this->held[$key]) ? 0 : $this->waitMs, reenter: $this->held[$key] ?? null);
        if ($r->grant === null) {
            throw LockRefusedException::fromResult($r);
        }
        $this->held[$key] = $r->grant;
    }

    public function releaseLock(string $path, int $type): void
    {
        $key = "$type:$path";
        if (isset($this->held[$key])) {
            $g = $this->held[$key];
            $this->engine->release($this->namespace, $g->id, $g->token);
            if (!$this->engine->isHeld($this->namespace, $g->id, $g->token)) {
                unset($this->held[$key]);   // its last hold
            }
        }
    }

    /** Shared -> exclusive or back. Not atomic: the old lock is given up first. */
    public function changeLock(string $path, int $targetType): void
    {
        $this->releaseLock($path, self::LOCK_SHARED + self::LOCK_EXCLUSIVE - $targetType);
        $this->acquireLock($path, $targetType);
    }

    /** Whether anyone holds a lock of $type on exactly $path. */
    public function isLocked(string $path, int $type): bool
    {
        foreach ($this->engine->list($this->namespace, $path) as $lock) {
            if ($lock->op === self::OPS[$type] && $lock->targets['target'] === $path) {
                return true;
            }
        }
        return false;
    }

    /** At the end of the request: everything it still holds. */
    public function releaseAll(): void
    {
        foreach ($this->held as $g) {
            while ($this->engine->release($this->namespace, $g->id, $g->token)) {
            }
        }
        $this->held = [];
    }
}

[, $url, $libraryFile] = $argv + [null, 'redis://127.0.0.1:6379', 'file-locks.lua'];
$engine = LockEngine::connect($url, Library::fromFile($libraryFile));
$ns = 'files-example-' . bin2hex(random_bytes(4));

$alice = new PathlockLockingProvider($engine, $ns, 'alice');
$bob = new PathlockLockingProvider($engine, $ns, 'bob', waitMs: 300);

$alice->acquireLock('/files/report.odt', PathlockLockingProvider::LOCK_SHARED);
$bob->acquireLock('/files/report.odt', PathlockLockingProvider::LOCK_SHARED);      // readers share
$bob->acquireLock('/files/notes.txt', PathlockLockingProvider::LOCK_EXCLUSIVE);   // another path
$bob->acquireLock('/files', PathlockLockingProvider::LOCK_EXCLUSIVE);             // the parent: its own path
try {
    $alice->changeLock('/files/report.odt', PathlockLockingProvider::LOCK_EXCLUSIVE);
    throw new LogicException('alice wrote while bob was reading');
} catch (LockRefusedException $e) {
    echo "alice may not write while bob reads: ", $e->getMessage(), "\n";
}
$bob->releaseAll();
$alice->acquireLock('/files/report.odt', PathlockLockingProvider::LOCK_EXCLUSIVE);  // now alone
echo 'exclusive on /files/report.odt: ', var_export($alice->isLocked('/files/report.odt', PathlockLockingProvider::LOCK_EXCLUSIVE), true), "\n";
$alice->releaseAll();
echo 'locks left: ', count($engine->list($ns)), "\n";
