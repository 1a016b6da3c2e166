package pathlock_test

// Keepers: renewal and the report of a lost lock, a keeper stopped by a
// release or its context, and Adopt.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"pathlock.dev/pathlock"
)

func TestKeeperRenewsAndReportsLoss(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	l := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "k", Op: "upload", Paths: []string{"/k"}, TTL: 300 * time.Millisecond})
	var mu sync.Mutex
	var reported error
	var k *pathlock.Keeper
	k = l.Keep(ctx, pathlock.KeepOptions{Every: 50 * time.Millisecond, OnLost: func(lost *pathlock.Lock, err error) {
		mu.Lock()
		reported = err
		mu.Unlock()
		_ = lost.Release(context.Background()) // callbacks may call Release and Stop
		k.Stop()
	}})
	// Renewed: still held after several leases' worth of renewals. Read the
	// server's view, not a clock: each renewal resets the lease to 300 ms.
	for i := 0; i < 3; i++ {
		prev := time.Duration(-1)
		eventually(t, "a renewal", func() bool {
			now, _ := c.ListAll(ctx, ns, "/")
			if len(now) != 1 {
				t.Fatal("the kept lock is gone")
			}
			renewed := prev >= 0 && now[0].ExpiresIn > prev
			prev = now[0].ExpiresIn
			return renewed
		})
	}
	if ok, err := c.ForceRelease(ctx, ns, l.ID()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	<-k.Lost()
	<-k.Done()
	<-k.Context().Done()
	if !errors.Is(k.Err(), pathlock.ErrLeaseLost) || !errors.Is(k.Err(), pathlock.ErrNotHolder) {
		t.Fatalf("keeper error %v", k.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if reported == nil {
		t.Fatal("OnLost was not called")
	}
}

func TestKeeperStopsOnRelease(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	l := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "k", Op: "upload", Paths: []string{"/k"}})
	k := l.Keep(ctx, pathlock.KeepOptions{Every: time.Millisecond})
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-k.Done()
	<-k.Context().Done() // no longer kept
	select {
	case <-k.Lost():
		t.Fatal("a released lock reported as lost")
	default:
	}
}

// The keeper stops with the context given to Keep; that is no loss.
func TestKeeperStopsWithItsContext(t *testing.T) {
	c := newClient(t)
	ns := newNS(t)
	l := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "k", Op: "upload", Paths: []string{"/k"}})
	ctx, cancel := context.WithCancel(context.Background())
	k := l.Keep(ctx, pathlock.KeepOptions{Every: 10 * time.Millisecond})
	cancel()
	<-k.Done()
	<-k.Context().Done()
	if k.Err() != nil {
		t.Fatalf("a stopped keeper reports %v", k.Err())
	}
	if ok, err := l.Held(context.Background()); !ok || err != nil {
		t.Fatalf("held %v %v", ok, err)
	}
}

// Adopt: a lock granted through another client (another process) is
// renewed with the TTL given, and kept and released like one of Acquire;
// a proof naming no live lock is ErrNotHolder.
func TestAdoptKeepsALockGrantedElsewhere(t *testing.T) {
	c, other := newClient(t), newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	granted := acquired(t, other, pathlock.Request{Namespace: ns, Owner: "k", Op: "upload", Paths: []string{"/k"}, TTL: time.Minute})
	l, err := c.Adopt(ctx, ns, granted.Proof(), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if l.ID() != granted.ID() || l.ExpiresIn() <= 0 || l.ExpiresIn() > 300*time.Millisecond {
		t.Fatalf("adopted %s with %v left", l.ID(), l.ExpiresIn())
	}
	k := l.Keep(ctx, pathlock.KeepOptions{})
	deadline := time.Now().Add(900 * time.Millisecond) // three of its new leases: only the keeper keeps it
	for time.Now().Before(deadline) {
		if ok, err := granted.Held(ctx); !ok || err != nil {
			t.Fatalf("the adopted lock was not kept: %v %v", ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-k.Done()
	if k.Err() != nil {
		t.Fatalf("a released lock reported as lost: %v", k.Err())
	}
	if _, err := c.Adopt(ctx, ns, granted.Proof(), time.Second); !errors.Is(err, pathlock.ErrNotHolder) {
		t.Fatalf("adopting a released lock: %v", err)
	}
	var inv *pathlock.InvalidError
	if _, err := c.Adopt(ctx, ns, granted.Proof(), 0); !errors.As(err, &inv) {
		t.Fatalf("a zero ttl: %v", err)
	}
}
