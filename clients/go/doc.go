// Package pathlock is a client of the pathlock lock table for Go services.
//
// pathlock locks paths of a file tree (a folder and everything inside it, or
// one file) for operations such as move_folder or upload, with the rules of a
// lock matrix: which operation may run beside which, on the same path, above
// or below it. The table lives in Redis (standalone, Sentinel or Cluster) as
// a Redis Functions library; every service, in any language, that calls the
// same library on the same server shares the same locks. This package speaks
// that protocol (docs/lua-protocol.md of the pathlock sources) with redigo.
//
// A Client is made once per Redis deployment with New and is safe for
// concurrent use; it holds no global state. Acquire takes a lock:
//
//	lock, err := client.Acquire(ctx, pathlock.Request{
//		Namespace: "project-42",
//		Owner:     "alice",
//		Op:        "move_folder",
//		Paths:     []string{"/p/A/C", "/p/B"},
//		TTL:       30 * time.Second,
//		Wait:      2 * time.Second,
//	})
//	var refused *pathlock.RefusedError
//	switch {
//	case errors.As(err, &refused):
//		// refused.Conflict names the lock (or older waiter) in the way
//	case err != nil:
//		// pathlock.ErrInvalid, pathlock.ErrBackend, context.Canceled, ...
//	default:
//		defer lock.Release(context.Background())
//		// pass lock.Fence() with every write
//	}
//
// Waiting: a refused request with Wait > 0 keeps a place in line (unless
// Fair is false) and is woken by releases on the namespace's wake-up channel,
// re-checking at least every 200 ms, until it is granted or Wait ends. The
// context cancels a wait: the request then leaves the line at once and Acquire
// returns the context's error; a grant that arrived while cancelling is
// released before Acquire returns, so nothing stays held.
//
// Every call honours its context while on the wire: it returns within the
// context's deadline plus DeadlineMargin however long Redis stalls, with a
// *ContextError (errors.Is(err, context.DeadlineExceeded) holds). Acquire
// tells the server its deadline (deadline_ms), so a late run grants nothing.
// A Client shares one wake-up subscription connection per server among its
// waits, and bounds its command connections (Options.MaxConns,
// ErrPoolExhausted).
//
// Errors are matched with errors.Is and errors.As: ErrRefused (*RefusedError
// carries the Conflict), ErrNotHolder (a reentry, release or renew whose id and
// token name no live lock), ErrOverLimit (*OverLimitError: a limit of the
// namespace refused the request, at once even when it would wait; see
// Client.SetLimits), ErrInvalid (bad input, answered before or by the
// library; nothing changed) and ErrBackend (Redis unreachable, refused
// permissions, a namespace of another data layout, ...; *BackendError).
//
// Lock.Convert gives a held lock a new operation and paths in one step, or
// changes nothing (docs/design.md#conversion): judged as an Acquire of them,
// waiting as an Acquire waits; granted, the lock keeps its ID and Token and
// gets a higher Fence. A would_deadlock refusal (a held lock waiting to
// convert to something this lock refuses) is a *RefusedError for which
// errors.Is(err, ErrWouldDeadlock) holds.
//
// A Keeper (Lock.Keep(ctx, ...)) renews a lock's lease in its own goroutine;
// its Context ends when the lease is lost (or the keeper stops), and a lost
// lease is also reported on a channel and to an optional callback. Storage
// should still compare fences: a lease can end between a check and a write.
package pathlock
