<?php

declare(strict_types=1);

// For use without Composer: the PSR-4 mapping of composer.json
// ("Pathlock\\" => "src/"). With Composer, require vendor/autoload.php instead.
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Pathlock\\') && !str_starts_with($class, 'Pathlock\\Tests\\')) {
        $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, strlen('Pathlock\\'))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
