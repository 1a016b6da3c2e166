// The waiting policy (docs/lua-protocol.md#waiting-and-the-line; C++:
// src/core/waiting.hpp): how a refused request with waitMs > 0 waits. A
// waiting acquire is a loop of attempts; after a refusal it sleeps until the
// first of a relevant wake-up, the end of the conflicting lease (plus the
// wake margin), the re-check interval and the deadline. The attempt made at
// the deadline is the last; its refusal is the answer. A fair request keeps
// a place in line meanwhile: each attempt reserves it for reserveMs() (the
// one function computing it); an error takes it out of the line. A waiting
// conversion is the same loop (its grant is never given back).
import { abortReason } from './abort';
import type { Contract } from './library';
import { pathsOverlap } from './paths';
import type { AcquireResult, Grant } from './types';

/** The numbers of the waiting policy, as the library's contract gives them (`contract.waiting`, protocol 4.4). */
export interface WaitingNumbers {
  /** The longest sleep between two attempts. */
  recheck_ms: number;
  /** The longest reservation of a place in line. */
  max_reservation_ms: number;
  /** Added to a blocker's expires_in_ms before the attempt that follows its end. */
  wake_margin_ms: number;
}

// The one place of the fallback for a library older than protocol 4.4,
// whose contract has no `waiting` (its library used the same numbers).
/** `contract.waiting.recheck_ms` of a library older than 4.4 (the client reads the contract's). */
export const RECHECK_MS = 200;
/** `contract.waiting.max_reservation_ms` of a library older than 4.4 (the client reads the contract's). */
export const MAX_RESERVATION_MS = 2000;
const PRE_4_4_WAITING: WaitingNumbers = { recheck_ms: RECHECK_MS, max_reservation_ms: MAX_RESERVATION_MS, wake_margin_ms: 1 };

/** The waiting numbers of a library: its contract's, or the fallback before protocol 4.4. */
export function waitingOf(contract: Contract): WaitingNumbers {
  return contract.waiting ?? PRE_4_4_WAITING;
}

/**
 * The reserve_ms of an attempt with `leftMs` of its wait left (rounded up
 * to whole ms): min(left + recheck, max reservation); 0 for the attempt at
 * the deadline (left <= 0) and for a request with no place in line.
 */
export function reserveMs(leftMs: number, inLine: boolean, w: WaitingNumbers): number {
  if (!inLine || leftMs <= 0) return 0;
  return Math.min(Math.ceil(leftMs) + w.recheck_ms, w.max_reservation_ms);
}

/** Does a wake-up message concern a request on `paths`? Only one naming an overlapping path (or an empty one). */
export function wakeConcerns(payload: string, paths: string[]): boolean {
  return payload === '' || payload.split('\n').some((p) => paths.some((q) => pathsOverlap(p, q)));
}

/** What an acquire gives the waiting policy (C++: WaitingAttempts). */
export interface WaitingAttempts {
  /** One attempt; reserveMs > 0 keeps (or takes) the place in line that long. */
  attempt(reserveMs: number): Promise<AcquireResult>;
  /** Called once, after the first refusal: subscribes to wake-ups; resolves to the unsubscribe. */
  listen(onMessage: (payload: string) => void): Promise<() => void>;
  /** Takes the place out of the line after an error. */
  leave(): Promise<unknown>;
  /**
   * Releases a grant that raced the abort. Absent (a conversion, which is
   * never undone): such a grant is the answer.
   */
  giveBack?(grant: Grant): void;
}

export interface Wait {
  paths: string[];
  /** Date.now() at the wait's end. */
  deadline: number;
  /** Has the request a place in line (fair and waiting)? */
  inLine: boolean;
  signal?: AbortSignal;
  numbers: WaitingNumbers;
  /** The longest sleep (the numbers' recheck_ms unless a test changed it). */
  recheckMs: number;
}

/** Runs the policy: attempts until granted, refused at the deadline, over a limit, would deadlock, or aborted. */
export async function waitFor(w: Wait, steps: WaitingAttempts): Promise<AcquireResult> {
  const { signal } = w;
  const sleeper = new Sleeper();
  const onMessage = (payload: string) => {
    if (wakeConcerns(payload, w.paths)) sleeper.wake();
  };
  const onAbort = () => sleeper.interrupt();
  signal?.addEventListener('abort', onAbort);
  let detach: (() => void) | undefined;
  let placeMayExist = false;
  try {
    for (;;) {
      const left = w.deadline - Date.now();
      const last = left <= 0;
      sleeper.woken = false;
      placeMayExist = w.inLine;
      const res = await steps.attempt(reserveMs(left, w.inLine, w.numbers));
      if (res.granted) placeMayExist = false;
      if (signal?.aborted) {
        // A grant that raced the abort is released, never dropped (or, a
        // conversion's, kept and answered).
        if (res.granted) {
          if (!steps.giveBack) return res;
          steps.giveBack(res.grant);
        }
        throw abortReason(signal);
      }
      // over a limit, would deadlock: at once, out of the line
      if (res.granted || res.notHolder || res.overLimit || res.wouldDeadlock) return res;
      if (last) {
        placeMayExist = false; // reserve 0: the refusal removed the place
        return res;
      }
      if (!detach) {
        // Subscribe, then try again at once (a removal before it is not missed).
        detach = await steps.listen(onMessage);
        if (signal?.aborted) throw abortReason(signal);
        continue;
      }
      if (sleeper.woken) continue;
      const sleepMs = Math.min(w.deadline - Date.now(), w.recheckMs, res.conflict.expiresInMs + w.numbers.wake_margin_ms);
      await sleeper.sleep(Math.max(0, sleepMs), signal);
      if (signal?.aborted) throw abortReason(signal);
    }
  } catch (e) {
    if (placeMayExist) {
      // An abort does not wait for a server that may stall.
      const left = steps.leave().catch(() => undefined);
      if (!signal?.aborted) await left;
    }
    throw e;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    detach?.();
  }
}

// The sleep of a wait between attempts: ended early by a relevant wake-up
// (which also marks `woken`, so a wake-up during an attempt is not lost) or
// by the abort.
class Sleeper {
  /** A relevant wake-up arrived since the last attempt began. */
  woken = false;
  private wakeUp?: () => void;
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }
  interrupt(): void {
    this.wakeUp?.();
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
      if (this.woken || signal?.aborted) done();
    });
  }
}
