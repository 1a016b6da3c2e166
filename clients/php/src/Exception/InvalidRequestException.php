<?php

declare(strict_types=1);

namespace Pathlock\Exception;

/**
 * Bad input: a malformed path, namespace, owner, id or number, an unknown
 * operation, or an argument the library answered `invalid`. Nothing was
 * changed.
 */
final class InvalidRequestException extends PathlockException
{
}
