<?php
// The PHP side of the test that every client folds names alike
// (tests/names_agree.py): the name policies of docs/design.md#names with
// php-intl's Normalizer (ICU) and mbstring's full case folding
// (MB_CASE_FOLD). Usage: php fold.php POLICY ASSIGNED_INC < names; prints,
// a line each, "=" and the folded name, or "!" and why it cannot be folded.
// A developer's tool: the PHP client is to fold the same way.

/** @return list<array{int,int}> the ranges of src/names/assigned_13.inc */
function read_assigned(string $path): array
{
    preg_match_all('/\{0x([0-9A-F]+), 0x([0-9A-F]+)\}/', (string) file_get_contents($path), $m, PREG_SET_ORDER);
    return array_map(fn ($r) => [hexdec($r[1]), hexdec($r[2])], $m);
}

function assigned(array $ranges, int $cp): bool
{
    [$lo, $hi] = [0, count($ranges) - 1];
    while ($lo <= $hi) {
        $mid = intdiv($lo + $hi, 2);
        if ($cp < $ranges[$mid][0]) {
            $hi = $mid - 1;
        } elseif ($cp > $ranges[$mid][1]) {
            $lo = $mid + 1;
        } else {
            return true;
        }
    }
    return false;
}

/** The byte offset of the first malformed sequence of $s, or -1. */
function first_invalid(string $s): int
{
    if (preg_match('//u', $s) === 1) {
        return -1;
    }
    for ($at = 0, $n = strlen($s); $at < $n;) {
        for ($len = 1; $len <= 4; $len++) {
            if (preg_match('//u', substr($s, $at, $len)) === 1) {
                break;
            }
        }
        if ($len > 4) {
            return $at;
        }
        $at += $len;
    }
    return -1;
}

function fold(string $policy, array $ranges, string $name): string
{
    $bad = first_invalid($name);
    if ($bad >= 0) {
        return "!is not valid UTF-8 (at byte $bad)";
    }
    foreach (mb_str_split($name, 1, 'UTF-8') as $ch) {
        $cp = mb_ord($ch, 'UTF-8');
        if (!assigned($ranges, $cp)) {
            return sprintf('!holds U+%04X, which is not assigned in Unicode 13.0: not every client can fold it', $cp);
        }
    }
    if ($policy === 'nfc') {
        return '=' . Normalizer::normalize($name, Normalizer::FORM_C);
    }
    $folded = mb_convert_case(Normalizer::normalize($name, Normalizer::FORM_D), MB_CASE_FOLD, 'UTF-8');
    return '=' . Normalizer::normalize($folded, Normalizer::FORM_C);
}

if ($argc !== 3 || !in_array($argv[1], ['nfc', 'nfc_casefold'], true)) {
    fwrite(STDERR, "usage: php fold.php nfc|nfc_casefold ASSIGNED_INC < names\n");
    exit(2);
}
$ranges = read_assigned($argv[2]);
while (($line = fgets(STDIN)) !== false) {
    echo fold($argv[1], $ranges, rtrim($line, "\n")), "\n";
}
