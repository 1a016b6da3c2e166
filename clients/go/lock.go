package pathlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Lock is a granted lock. Its methods are safe for concurrent use.
type Lock struct {
	c     *Client
	ns    string
	id    string
	token string

	mu sync.Mutex
	// fence, holds, expiresIn and ttl: at the grant, or at the last
	// Convert (under mu).
	fence     uint64
	holds     int
	expiresIn time.Duration
	ttl       time.Duration
	keeper    *Keeper
}

// ID is the lock's id.
func (l *Lock) ID() string { return l.id }

// Token is the lock's secret: release, renew and reentry need it.
func (l *Lock) Token() string { return l.token }

// Namespace is the namespace the lock lives in.
func (l *Lock) Namespace() string { return l.ns }

// Fence is the lock's fencing token: it increases with every new lock of
// the namespace (and every conversion) and never goes back. Pass it with
// every write the operation makes, and let storage refuse writes with a
// lower one.
func (l *Lock) Fence() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fence
}

// Holds is the number of holds at the grant (1, or more after a reentry)
// or at the last Convert.
func (l *Lock) Holds() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holds
}

// ExpiresIn is the lease left at the grant or at the last Convert.
func (l *Lock) ExpiresIn() time.Duration {
	_, left := l.lease()
	return left
}

// lease: the lock's TTL and the lease left at the grant or at the last
// Convert.
func (l *Lock) lease() (ttl, left time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ttl, l.expiresIn
}

// Proof is what a reentry needs (Request.Reenter).
func (l *Lock) Proof() Proof { return Proof{ID: l.id, Token: l.token} }

// Release drops one hold; the lock goes with its last hold, and then its
// keeper stops. It answers ErrNotHolder when the lock is no longer held
// (released, expired or force-released).
func (l *Lock) Release(ctx context.Context) error {
	left, err := l.c.Release(ctx, l.ns, l.id, l.token)
	if err == nil && left == 0 || errors.Is(err, ErrNotHolder) {
		l.mu.Lock()
		k := l.keeper
		l.mu.Unlock()
		if k != nil {
			k.Stop()
		}
	}
	return err
}

// Renew makes the lease end ttl from now (0: the lock's own TTL; a given
// ttl becomes its TTL) and returns the lease now left. ErrNotHolder: the lock
// is gone.
func (l *Lock) Renew(ctx context.Context, ttl time.Duration) (time.Duration, error) {
	return l.c.Renew(ctx, l.ns, l.id, l.token, ttl)
}

// Held asks whether the lock is still held with its token (read-only).
func (l *Lock) Held(ctx context.Context) (bool, error) {
	return l.c.Held(ctx, l.ns, l.id, l.token)
}

// Release drops one hold of lock id; it returns the holds left (0: the lock
// is gone) or ErrNotHolder.
func (c *Client) Release(ctx context.Context, ns, id, token string) (int, error) {
	r, err := c.call(ctx, ns, "release", id, token)
	if err != nil {
		return 0, err
	}
	switch status(r[0]) {
	case "released":
		return int(num(at1(r))), nil
	case "missing":
		return 0, ErrNotHolder
	}
	return 0, unexpected("release", r)
}

// Renew renews lock id (ttl 0: its own TTL) and returns the lease left, or
// ErrNotHolder.
func (c *Client) Renew(ctx context.Context, ns, id, token string, ttl time.Duration) (time.Duration, error) {
	t := ""
	if ttl != 0 {
		if ttl < time.Millisecond || ttl > MaxTTL {
			return 0, invalidf("ttl must be 1 ms to one week")
		}
		t = ms(ttl)
	}
	r, err := c.call(ctx, ns, "renew", id, token, t)
	if err != nil {
		return 0, err
	}
	switch status(r[0]) {
	case "renewed":
		return millis(at1(r)), nil
	case "missing":
		return 0, ErrNotHolder
	}
	return 0, unexpected("renew", r)
}

// Adopt takes up a lock granted elsewhere (another process, or before a
// restart of this one) by its proof: it renews the lock with ttl (1 ms to
// MaxTTL; it becomes the lock's TTL) and returns it as a Lock, whose Keep,
// Renew, Held and Release work as for one from Acquire. Fence and Holds of
// an adopted Lock are 0 (not known here). ErrNotHolder: no such lock.
func (c *Client) Adopt(ctx context.Context, ns string, p Proof, ttl time.Duration) (*Lock, error) {
	if ttl == 0 {
		return nil, invalidf("ttl must be 1 ms to one week")
	}
	left, err := c.Renew(ctx, ns, p.ID, p.Token, ttl)
	if err != nil {
		return nil, err
	}
	return &Lock{c: c, ns: ns, id: p.ID, token: p.Token, expiresIn: left, ttl: ttl}, nil
}

// Held: is lock id live with this token? Read-only (FCALL_RO).
func (c *Client) Held(ctx context.Context, ns, id, token string) (bool, error) {
	r, err := c.callCmd(ctx, "FCALL_RO", ns, "held", id, token)
	if err != nil {
		return false, err
	}
	if status(r[0]) != "held" {
		return false, unexpected("held", r)
	}
	return num(at1(r)) == 1, nil
}

// ForceRelease drops lock id whatever its holds, without its token (for
// administrators). It answers whether there was such a lock.
func (c *Client) ForceRelease(ctx context.Context, ns, id string) (bool, error) {
	r, err := c.call(ctx, ns, "force_release", id)
	if err != nil {
		return false, err
	}
	switch status(r[0]) {
	case "released":
		return true, nil
	case "missing":
		return false, nil
	}
	return false, unexpected("force_release", r)
}

func at1(r []interface{}) interface{} {
	if len(r) > 1 {
		return r[1]
	}
	return nil
}
