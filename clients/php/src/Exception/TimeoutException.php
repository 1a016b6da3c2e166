<?php

declare(strict_types=1);

namespace Pathlock\Exception;

/**
 * No reply within the command timeout (phpredis's read timeout, the
 * engine's `commandTimeout`): the server stalled or the network did. Like
 * every lost reply the call may have run (a BackendException); it is never
 * sent again by this library. The connection is reopened by the next call.
 */
final class TimeoutException extends BackendException
{
}
