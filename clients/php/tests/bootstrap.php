<?php

declare(strict_types=1);

// Test bootstrap: the PSR-4 autoloader (Composer's when `composer
// dump-autoload` was run, else src/autoload.php plus the tests' namespace),
// and the one thing the suite cannot guess: which Functions library to load.

$root = dirname(__DIR__);
if (is_file("$root/vendor/autoload.php")) {
    require "$root/vendor/autoload.php";
} else {
    require "$root/src/autoload.php";
}
// The tests' namespace, also when Composer's autoloader was dumped --no-dev.
spl_autoload_register(static function (string $class) use ($root): void {
    if (str_starts_with($class, 'Pathlock\\Tests\\')) {
        $file = "$root/tests/" . str_replace('\\', '/', substr($class, strlen('Pathlock\\Tests\\'))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});

$library = getenv('PATHLOCK_LIBRARY');
if ($library === false || $library === '' || !is_file($library)) {
    fwrite(STDERR, "error: set PATHLOCK_LIBRARY to the pathlock_library.lua to test against "
        . "(a build writes build/pathlock_matrix/pathlock_cloud_drive/redis/pathlock_library.lua)"
        . ($library ? "; '$library' is not a file" : '') . "\n");
    exit(1);
}
