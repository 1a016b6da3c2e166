package pathlock_test

// Waiting: a wait woken by a release, one that ends refused, and a wait
// cancelled (nothing left behind, a grant racing the cancel released).

import (
	"context"
	"errors"
	"testing"
	"time"

	"pathlock.dev/pathlock"
)

// waitInLine waits until the namespace has n places in line.
func waitInLine(t *testing.T, c *pathlock.Client, ns string, n int) []pathlock.Waiter {
	t.Helper()
	var ws []pathlock.Waiter
	eventually(t, "places in line", func() bool {
		var err error
		ws, err = c.Waiters(context.Background(), ns, "/", 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(ws) == n
	})
	return ws
}

type result struct {
	lock *pathlock.Lock
	err  error
}

// acquiring starts req on c in a goroutine; its result arrives on the
// channel (buffered: the goroutine never blocks on a test that stopped).
func acquiring(ctx context.Context, c *pathlock.Client, req pathlock.Request) chan result {
	done := make(chan result, 1)
	go func() {
		l, err := c.Acquire(ctx, req)
		done <- result{l, err}
	}()
	return done
}

// folderHeld: a client, a fresh namespace, and owner a's delete_folder lock
// on folder for a minute.
func folderHeld(t *testing.T, folder string) (*pathlock.Client, string, *pathlock.Lock) {
	t.Helper()
	c := newClient(t)
	ns := newNS(t)
	return c, ns, acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "delete_folder", Paths: []string{folder}, TTL: time.Minute})
}

func TestWaitWokenByRelease(t *testing.T) {
	c, ns, holder := folderHeld(t, "/w")
	ctx := context.Background()
	done := acquiring(ctx, c, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/w/x"}, Wait: time.Minute})
	ws := waitInLine(t, c, ns, 1)
	if ws[0].Owner != "b" || ws[0].Op != "upload" || ws[0].Targets[0].Path != "/w/x" {
		t.Fatalf("waiter %+v", ws[0])
	}
	rows, truncated, err := c.Blockers(ctx, ns, "upload", []string{"/w/x"}, 10)
	if err != nil || truncated || len(rows) != 1 || rows[0].ID != holder.ID() || rows[0].Relation != pathlock.HeldAncestor {
		t.Fatalf("blockers %+v %v %v", rows, truncated, err)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("the waiter: %v", r.err)
	}
	waitInLine(t, c, ns, 0)
	if err := r.lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestWaitTimesOutRefused(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	if _, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "a", Op: "delete_folder", Paths: []string{"/w"}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/w/x"}, Wait: 50 * time.Millisecond})
	if !errors.Is(err, pathlock.ErrRefused) {
		t.Fatalf("want ErrRefused, got %v", err)
	}
	waitInLine(t, c, ns, 0) // the last attempt left the line
}

func TestCancelLeavesNothing(t *testing.T) {
	c, ns, holder := folderHeld(t, "/c")
	bg := context.Background()
	ctx, cancel := context.WithCancel(bg)
	done := acquiring(ctx, c, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/c/x"}, Wait: time.Hour})
	waitInLine(t, c, ns, 1)
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) || r.lock != nil {
		t.Fatalf("want context.Canceled, got %v %v", r.lock, r.err)
	}
	if ws, err := c.Waiters(bg, ns, "/", 10); err != nil || len(ws) != 0 {
		t.Fatalf("still in line: %+v %v", ws, err)
	}
	locks, err := c.ListAll(bg, ns, "/")
	if err != nil || len(locks) != 1 || locks[0].ID != holder.ID() {
		t.Fatalf("locks %+v %v", locks, err)
	}
	// A cancelled context never starts a request.
	if _, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/d"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

// A grant that arrives while the context is being cancelled is released,
// never dropped.
func TestGrantRacingCancelIsReleased(t *testing.T) {
	c, ns, holder := folderHeld(t, "/r")
	bg := context.Background()
	ctx, cancel := context.WithCancel(bg)
	granted := make(chan struct{}, 1)
	pathlock.SetAfterAttempt(c, func(g bool) {
		if g {
			cancel() // the cancel lands between the grant's reply and the loop's look
			granted <- struct{}{}
		}
	})
	done := acquiring(ctx, c, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/r/x"}, Wait: time.Hour})
	waitInLine(t, c, ns, 1)
	if err := holder.Release(bg); err != nil {
		t.Fatal(err)
	}
	r := <-done
	<-granted
	if !errors.Is(r.err, context.Canceled) || r.lock != nil {
		t.Fatalf("want context.Canceled, got %v %v", r.lock, r.err)
	}
	locks, err := c.ListAll(bg, ns, "/")
	if err != nil || len(locks) != 0 {
		t.Fatalf("the raced grant is still held: %+v %v", locks, err)
	}
	waitInLine(t, c, ns, 0)
}
