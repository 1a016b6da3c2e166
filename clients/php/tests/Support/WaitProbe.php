<?php

declare(strict_types=1);

namespace Pathlock\Tests\Support;

use Pathlock\Cancellation;

/**
 * A Cancellation used as a probe of a waiting acquire: its stream stays
 * readable, so the wait asks isCancelled() whenever it sleeps; each call
 * runs the current step, which answers null while its condition does not
 * hold yet (the wait asks again), else the probe goes to the next step.
 * After the last step it goes quiet. It never cancels, unless made with
 * $cancels: then it is cancelled from its last step on.
 */
final class WaitProbe implements Cancellation
{
    /** @var array{resource, resource} */
    private array $pair;
    public int $step = 0;

    /** @param list<\Closure(): mixed> $steps */
    public function __construct(private readonly array $steps, private readonly bool $cancels = false)
    {
        $this->pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        fwrite($this->pair[1], 'x');
    }

    public function streams(): array
    {
        return [$this->pair[0]];
    }

    public function isCancelled(): bool
    {
        if ($this->step < count($this->steps) && ($this->steps[$this->step])() !== null) {
            $this->step++;
            if ($this->step === count($this->steps)) {
                fread($this->pair[0], 1);
            }
        } elseif ($this->step < count($this->steps)) {
            usleep(2000);   // not yet: the wait asks again at once
        }
        return $this->cancels && $this->step === count($this->steps);
    }
}
