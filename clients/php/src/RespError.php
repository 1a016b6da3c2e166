<?php

declare(strict_types=1);

namespace Pathlock;

/** An error reply read by Resp::parse(). */
final readonly class RespError
{
    public function __construct(public string $message)
    {
    }
}
