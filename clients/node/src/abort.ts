// Cancellation: a call ended by an AbortSignal, also while its command is
// in flight (the command goes on; its late answer goes to `onLate`).
import { AbortError } from './errors';

// AbortSignal.any (Node 20.3), which the ES2022 lib does not declare.
export function anySignal(signals: AbortSignal[]): AbortSignal {
  return (AbortSignal as unknown as { any(s: AbortSignal[]): AbortSignal }).any(signals);
}

export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new AbortError();
}

/**
 * `call`'s answer, or a rejection with the signal's reason as soon as the
 * signal aborts (the call itself goes on; `onLate` gets its answer then).
 */
export function untilAborted<T>(call: Promise<T>, signal: AbortSignal | undefined, onLate?: (value: T) => void): Promise<T> {
  if (!signal) return call;
  if (signal.aborted) {
    call.then(onLate, () => undefined);
    return Promise.reject(abortReason(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      call.then(onLate, () => undefined);
      reject(abortReason(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    call.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
