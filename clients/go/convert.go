package pathlock

// Conversion (protocol 4.5, docs/design.md#conversion): a held lock takes a
// new operation and new paths in one call of the library's convert, whose
// arguments are acquire's by the same names (docs/lua-protocol.md#convert).
// It is built and waits by Acquire's code (acquire.go).

import (
	"context"
	"time"
)

// Conversion asks for a held lock's new operation and paths (Lock.Convert).
type Conversion struct {
	Op string // the new operation, any of the library's matrix
	// Paths: one per role of Op, in the matrix's role order, as
	// Request.Paths.
	Paths []string
	// TTL: the lease on success, now + TTL; it becomes the lock's TTL
	// (default 30 s, at most one week).
	TTL time.Duration
	// Wait: how long a refused conversion waits, holding the lock as it is
	// (0: answer at once).
	Wait time.Duration
	// Unfair: waits without a place in line and may overtake older waiting
	// requests, as Request.Unfair.
	Unfair bool
	// IdempotencyKey (1..128 of [A-Za-z0-9._:-]) makes a retry of a
	// conversion whose reply was lost safe: the same key, operation and
	// paths get the lock back as that conversion made it. It becomes the
	// lock's key.
	IdempotencyKey string
}

// Convert converts the lock to conv's operation and paths in one step, or
// changes nothing: see Client.Convert. Granted, the Lock takes its new
// Fence, lease, Holds and TTL in place; its ID and Token stay (Proof, a
// Keeper and storage checks keep working). A Keeper without its own
// KeepOptions.Every takes its pace from the new TTL (a third of it).
func (l *Lock) Convert(ctx context.Context, conv Conversion) error {
	got, err := l.c.Convert(ctx, l.ns, l.Proof(), conv)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.fence, l.holds, l.expiresIn, l.ttl = got.fence, got.holds, got.expiresIn, got.ttl
	k := l.keeper
	l.mu.Unlock()
	if k != nil {
		k.converted()
	}
	return nil
}

// ConversionBlockers is Client.ConversionBlockers of this lock: why would
// l.Convert(ctx, conv) be refused now? Read-only; the lock is unchanged.
func (l *Lock) ConversionBlockers(ctx context.Context, conv Conversion, limit int) (rows []Blocker, truncated bool, err error) {
	return l.c.ConversionBlockers(ctx, l.ns, l.id, conv, limit)
}

// Convert converts the lock that p proves (in namespace ns) to conv's
// operation and paths: one call of the library's convert per attempt,
// judged as an Acquire of them with the lock's own paths set aside, and
// waiting as an Acquire waits (Conversion.Wait). It returns the lock as
// converted: the same ID and Token, a Fence above every fence issued
// before, its lease and Holds (1). Every error leaves the lock as it was:
// a *RefusedError (errors.Is ErrRefused) names the conflict that remains
// at the end of Wait, and with WouldDeadlock (errors.Is ErrWouldDeadlock,
// answered at once) a held lock that is itself waiting to convert to
// something this lock refuses; ErrNotHolder: no live lock with that
// proof; *OverLimitError, *InvalidError (a lock with more than one hold,
// bad input), *BackendError, or the context's error when ctx ends while
// the conversion waits (it has left the line). A conversion granted as ctx
// ends is not undone (its lock's old operation may no longer fit beside
// what was granted since): it is returned. A conversion whose reply was
// lost may have been made (a *ContextError with Sent, a *BackendError): the
// lock then has the new operation; with an IdempotencyKey, sending the
// same conversion again answers it (List shows it too).
func (c *Client) Convert(ctx context.Context, ns string, p Proof, conv Conversion) (*Lock, error) {
	req := conv.request(ns, p)
	paths, err := req.checkConversion()
	if err != nil {
		return nil, err
	}
	return c.send(ctx, "convert", &req, paths, WireIDs{Waiter: "w" + randomHex(12)})
}

// request: the conversion as the acquire request whose arguments convert
// takes: no owner and no new id or token (the lock keeps its own), the
// lock's proof as the reentry's.
func (conv Conversion) request(ns string, p Proof) Request {
	return Request{Namespace: ns, Op: conv.Op, Paths: conv.Paths, TTL: conv.TTL, Wait: conv.Wait,
		Unfair: conv.Unfair, Reenter: p, IdempotencyKey: conv.IdempotencyKey}
}
