<?php
// Fixture for tools/dev/function_lengths.py: braces in strings and comments
// do not end a PHP function early; a closure is a function of its own.

final class Shape
{
    public function tooLong(string $x): string
    {
        // 67 lines
        $a = '}';
        $b = "}}\"";
        # }
        /* } */
        $f = function ($y) use ($a): string {
            return $y . $a;
        };
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        $x = trim($x);
        return $f($x) . $b;
    }

    public function fits(int $x): int
    {
        // 60 lines
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        $x++;
        return $x;
    }
}

function oneLine(): int { return 1; }
