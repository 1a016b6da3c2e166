<?php

declare(strict_types=1);

namespace Pathlock;

use Pathlock\Exception\InvalidRequestException;

/**
 * The limits of a namespace (protocol 4.3): the most live locks, places in
 * line and locks per owner it may have; null: no such limit. Only live data
 * counts: a lock whose lease ended, or a place whose reservation ended, no
 * longer does. LockEngine::setLimits() gives a namespace its own,
 * setDefaultLimits() sets the default of every namespace without them.
 */
final readonly class Limits
{
    /** The largest value of a limit (the contract's `limit_max`). */
    public const MAX = 1000000000;

    public function __construct(
        public ?int $locks = null,
        public ?int $places = null,
        public ?int $ownerLocks = null,
    ) {
    }

    /** No limit at all. */
    public function isNone(): bool
    {
        return $this->locks === null && $this->places === null && $this->ownerLocks === null;
    }

    /**
     * The text form the library reads: "LOCKS PLACES OWNER_LOCKS", each
     * decimal digits or "-".
     *
     * @throws InvalidRequestException a limit outside 0..MAX
     */
    public function text(): string
    {
        $words = [];
        foreach (['locks' => $this->locks, 'places' => $this->places, 'ownerLocks' => $this->ownerLocks] as $name => $v) {
            if ($v !== null && ($v < 0 || $v > self::MAX)) {
                throw new InvalidRequestException(sprintf('limit %s must be 0..%d, got %d', $name, self::MAX, $v));
            }
            $words[] = $v === null ? '-' : (string) $v;
        }
        return implode(' ', $words);
    }

    /** Reads the text form; null when it is not one. */
    public static function parse(string $text): ?self
    {
        $words = explode(' ', $text);
        if (count($words) !== 3) {
            return null;
        }
        $v = [];
        foreach ($words as $w) {
            if ($w !== '-' && (preg_match('/\A[0-9]{1,10}\z/', $w) !== 1 || (int) $w > self::MAX)) {
                return null;
            }
            $v[] = $w === '-' ? null : (int) $w;
        }
        return new self($v[0], $v[1], $v[2]);
    }
}
