package pathlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrLeaseLost is the Keeper's error when the lease ended before a renewal
// got through (Err wraps the last failure).
var ErrLeaseLost = errors.New("pathlock: lease lost")

// KeepOptions configure a Keeper.
type KeepOptions struct {
	// Every: how often to renew (default a third of the lock's TTL, taken
	// again after a conversion changes the TTL).
	Every time.Duration
	// TTL for each renewal (0: the lock's own).
	TTL time.Duration
	// OnLost is called once, on the keeper's goroutine, when the lease is
	// lost. It may call the lock's or the keeper's methods (Release, Stop).
	OnLost func(l *Lock, err error)
}

// Keeper renews a lock's lease in its own goroutine until stopped, its
// context ends, the lock is released through Lock.Release, or the lease is
// lost. Its Context is the one to run the lock's work under (etcd's
// Session.Done() model): it ends with the keeper.
type Keeper struct {
	lock     *Lock
	o        KeepOptions
	ctx      context.Context
	cancel   context.CancelFunc
	stop     chan struct{}
	stopOnce sync.Once
	retime   chan struct{} // a conversion changed the lease (Lock.Convert)
	lost     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	err      error
}

// Keep starts a Keeper for the lock (a lock has at most one: a second Keep
// stops the first). The keeper stops when ctx ends; each renewal is a call
// under ctx that gives up at the lease's end as last known, so a lease that
// runs out while the server stalls is reported lost when it ends.
func (l *Lock) Keep(ctx context.Context, o KeepOptions) *Keeper {
	k := &Keeper{lock: l, o: o, stop: make(chan struct{}), retime: make(chan struct{}, 1), lost: make(chan struct{}),
		done: make(chan struct{})}
	k.ctx, k.cancel = context.WithCancel(ctx)
	if old := swapLocked(&l.mu, &l.keeper, k); old != nil {
		old.Stop()
	}
	go k.run()
	return k
}

// Stop ends the renewals and cancels Context. It does not wait for a
// renewal in flight and may be called from OnLost, any number of times.
func (k *Keeper) Stop() {
	k.stopOnce.Do(func() {
		close(k.stop)
		k.cancel()
	})
}

// Done is closed when the keeper's goroutine has ended.
func (k *Keeper) Done() <-chan struct{} { return k.done }

// Context is cancelled when the lock is no longer kept: the lease was lost
// (then Err is not nil), the keeper was stopped or its lock released, or the
// context given to Keep ended. Run the lock's work under it.
func (k *Keeper) Context() context.Context { return k.ctx }

// Lost is closed when the lease was lost (never after Stop).
func (k *Keeper) Lost() <-chan struct{} { return k.lost }

// Err is nil until the lease was lost; then it wraps ErrLeaseLost (and
// ErrNotHolder when the server said the lock is gone).
func (k *Keeper) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// every is how often to renew now: KeepOptions.Every, or a third of the
// renewals' TTL (the lock's own as it is now, when KeepOptions.TTL is 0).
func (k *Keeper) every() time.Duration {
	if k.o.Every > 0 {
		return k.o.Every
	}
	ttl := k.o.TTL
	if ttl == 0 {
		ttl, _ = k.lock.lease()
	}
	if ttl/3 < time.Millisecond {
		return time.Millisecond
	}
	return ttl / 3
}

// converted tells the keeper that a conversion gave the lock a new lease
// (and perhaps TTL): it takes its pace and the lease's end again.
func (k *Keeper) converted() {
	select {
	case k.retime <- struct{}{}:
	default:
	}
}

func (k *Keeper) stopped() bool {
	select {
	case <-k.stop:
		return true
	default:
		return false
	}
}

func (k *Keeper) run() {
	defer close(k.done)
	defer k.cancel()
	l := k.lock
	end := time.Now().Add(l.ExpiresIn()) // the lease's end as last known
	t := time.NewTimer(k.every())
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-k.ctx.Done():
			return
		case <-k.retime:
			end = time.Now().Add(l.ExpiresIn())
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			t.Reset(k.every())
			continue
		case <-t.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithDeadline(k.ctx, end)
		left, err := l.Renew(ctx, k.o.TTL)
		cancel()
		if k.stopped() || k.ctx.Err() != nil {
			return // released or stopped meanwhile: a "missing" is no loss
		}
		switch {
		case err == nil:
			end = sent.Add(left)
			t.Reset(k.every())
			continue
		case errors.Is(err, ErrNotHolder) || !time.Now().Before(end):
			k.lose(err)
			return
		}
		// A failed renewal (Redis unreachable): try again soon, while the
		// lease lasts.
		next := k.every() / 4
		if next < 10*time.Millisecond {
			next = 10 * time.Millisecond
		}
		t.Reset(next)
	}
}

// lose reports the lease lost: Err, Lost, Context, then OnLost.
func (k *Keeper) lose(err error) {
	k.mu.Lock()
	k.err = &lostError{err: err}
	k.mu.Unlock()
	close(k.lost)
	k.cancel()
	if k.o.OnLost != nil {
		k.o.OnLost(k.lock, k.err)
	}
}

type lostError struct{ err error }

func (e *lostError) Error() string        { return ErrLeaseLost.Error() + ": " + e.err.Error() }
func (e *lostError) Is(target error) bool { return target == ErrLeaseLost }
func (e *lostError) Unwrap() error        { return e.err }

// swapLocked sets *p to v under mu and returns the value it replaced, for
// the caller to dispose of outside the lock.
func swapLocked[T any](mu *sync.Mutex, p *T, v T) T {
	mu.Lock()
	defer mu.Unlock()
	old := *p
	*p = v
	return old
}
