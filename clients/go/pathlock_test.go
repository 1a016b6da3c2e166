package pathlock_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"pathlock.dev/pathlock"
)

// orderedTargets reads a {"role":"path"} object in its key order.
type orderedTargets struct{ roles, paths []string }

func (o *orderedTargets) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil {
		return err
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return err
		}
		var v string
		if err := d.Decode(&v); err != nil {
			return err
		}
		o.roles = append(o.roles, k.(string))
		o.paths = append(o.paths, v)
	}
	return nil
}

func TestPathVectors(t *testing.T) {
	var v struct {
		Normalize []struct {
			InputHex  string `json:"input_hex"`
			Canonical string `json:"canonical"`
		} `json:"normalize"`
		Invalid []struct {
			InputHex string `json:"input_hex"`
			Reason   string `json:"reason"`
		} `json:"invalid"`
	}
	readVectors(t, "paths.json", &v)
	if len(v.Normalize) == 0 || len(v.Invalid) == 0 {
		t.Fatal("no path vectors")
	}
	for _, c := range v.Normalize {
		in, _ := hex.DecodeString(c.InputHex)
		got, err := pathlock.NormalizePath(string(in))
		if err != nil || got != c.Canonical {
			t.Errorf("NormalizePath(%q) = %q, %v; want %q", in, got, err, c.Canonical)
		}
	}
	for _, c := range v.Invalid {
		in, _ := hex.DecodeString(c.InputHex)
		if got, err := pathlock.NormalizePath(string(in)); !errors.Is(err, pathlock.ErrInvalid) {
			t.Errorf("NormalizePath(%q) = %q, %v; want ErrInvalid (%s)", in, got, err, c.Reason)
		}
	}
}

func TestMatrixCases(t *testing.T) {
	var v struct {
		Cases []struct {
			HeldOp           string         `json:"held_op"`
			HeldTargets      orderedTargets `json:"held_targets"`
			HeldRole         string         `json:"held_role"`
			HeldPath         string         `json:"held_path"`
			RequestedOp      string         `json:"requested_op"`
			RequestedTargets orderedTargets `json:"requested_targets"`
			RequestedRole    string         `json:"requested_role"`
			Relation         string         `json:"relation"`
			Granted          bool           `json:"granted"`
		} `json:"cases"`
	}
	readVectors(t, "matrix-cases.json", &v)
	if len(v.Cases) == 0 {
		t.Fatal("no matrix cases")
	}
	c := newClient(t)
	ctx := context.Background()
	for i, k := range v.Cases {
		ns := newNS(t)
		held, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "h", Op: k.HeldOp, Paths: k.HeldTargets.paths})
		if err != nil {
			t.Fatalf("case %d: held %s: %v", i, k.HeldOp, err)
		}
		_, err = c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "r", Op: k.RequestedOp, Paths: k.RequestedTargets.paths})
		var refused *pathlock.RefusedError
		switch {
		case k.Granted && err != nil:
			t.Errorf("case %d (%s %s / %s %s %s): want granted, got %v", i, k.HeldOp, k.HeldRole, k.RequestedOp, k.RequestedRole, k.Relation, err)
		case !k.Granted && !errors.As(err, &refused):
			t.Errorf("case %d (%s %s / %s %s %s): want refused, got %v", i, k.HeldOp, k.HeldRole, k.RequestedOp, k.RequestedRole, k.Relation, err)
		case !k.Granted:
			cf := refused.Conflict
			if cf.ID != held.ID() || cf.Role != k.HeldRole || cf.Path != k.HeldPath || cf.RequestedRole != k.RequestedRole ||
				string(cf.Relation) != k.Relation || cf.Queued || cf.Op != k.HeldOp || cf.Owner != "h" {
				t.Errorf("case %d: conflict %+v does not name %s %s %s (%s)", i, cf, k.HeldOp, k.HeldRole, k.HeldPath, k.Relation)
			}
		}
	}
}

func TestErrorsAndProofs(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	l := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "alice", Op: "delete_folder", Paths: []string{"/p//A/"}})
	// The owner is no proof: a second acquire by alice is refused.
	_, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "alice", Op: "delete_folder", Paths: []string{"/p/A"}})
	if !errors.Is(err, pathlock.ErrRefused) {
		t.Fatalf("want ErrRefused, got %v", err)
	}
	// Reentry with the proof: same lock, holds 2.
	r, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "alice", Op: "delete_folder", Paths: []string{"/p/A"}, Reenter: l.Proof()})
	if err != nil || r.ID() != l.ID() || r.Fence() != l.Fence() || r.Holds() != 2 {
		t.Fatalf("reentry: %v %v", r, err)
	}
	_, err = c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "alice", Op: "delete_folder", Paths: []string{"/p/A"},
		Reenter: pathlock.Proof{ID: l.ID(), Token: "wrong"}})
	if !errors.Is(err, pathlock.ErrNotHolder) {
		t.Fatalf("want ErrNotHolder, got %v", err)
	}
	// Bad input.
	for _, req := range []pathlock.Request{
		{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"relative"}},
		{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/a/../b"}},
		{Namespace: ns, Owner: "a", Op: "no_such_op", Paths: []string{"/x"}},
		{Namespace: ns, Owner: "a", Op: "move_folder", Paths: []string{"/m/A", "/m/A/B"}},
		{Namespace: "bad ns", Owner: "a", Op: "upload", Paths: []string{"/x"}},
		{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/x"}, TTL: -time.Second},
	} {
		if _, err := c.Acquire(ctx, req); !errors.Is(err, pathlock.ErrInvalid) {
			t.Errorf("%+v: want ErrInvalid, got %v", req, err)
		}
	}
	// Release drops one hold, then the lock; then ErrNotHolder.
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if held, _ := l.Held(ctx); !held {
		t.Fatal("one hold left: still held")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if held, _ := l.Held(ctx); held {
		t.Fatal("released, yet held")
	}
	if err := l.Release(ctx); !errors.Is(err, pathlock.ErrNotHolder) {
		t.Fatalf("want ErrNotHolder, got %v", err)
	}
	if _, err := l.Renew(ctx, 0); !errors.Is(err, pathlock.ErrNotHolder) {
		t.Fatalf("want ErrNotHolder, got %v", err)
	}
}

// Idempotency keys, fences, listing by pages and ForceRelease.
func TestKeysFencesAndListing(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	// Idempotency key: the retry gets the same lock.
	req := pathlock.Request{Namespace: ns, Owner: "bob", Op: "upload", Paths: []string{"/k/f"}, IdempotencyKey: "op-123"}
	a := acquired(t, c, req)
	b, err := c.Acquire(ctx, req)
	if err != nil || b.ID() != a.ID() || b.Token() != a.Token() || b.Fence() != a.Fence() {
		t.Fatalf("retry with the key: %v %v", b, err)
	}
	req.Owner = "mallory"
	if _, err := c.Acquire(ctx, req); !errors.Is(err, pathlock.ErrInvalid) {
		t.Fatalf("the key with another owner: want ErrInvalid, got %v", err)
	}
	// Fences never go backwards.
	d, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "bob", Op: "upload", Paths: []string{"/k/g"}})
	if err != nil || d.Fence() <= a.Fence() {
		t.Fatalf("fence %d after %d: %v", d.Fence(), a.Fence(), err)
	}
	// List, paged; ForceRelease.
	p, err := c.List(ctx, ns, "/k", 1, "")
	if err != nil || len(p.Locks) != 1 || p.Locks[0].ID != a.ID() || p.Next == "" {
		t.Fatalf("first page: %+v %v", p, err)
	}
	p, err = c.List(ctx, ns, "/k", 1, p.Next)
	if err != nil || len(p.Locks) != 1 || p.Locks[0].ID != d.ID() {
		t.Fatalf("second page: %+v %v", p, err)
	}
	if ok, err := c.ForceRelease(ctx, ns, d.ID()); !ok || err != nil {
		t.Fatalf("force release: %v %v", ok, err)
	}
	if ok, _ := c.ForceRelease(ctx, ns, d.ID()); ok {
		t.Fatal("force release of a gone lock answered true")
	}
}

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

func TestFunctionNotFoundLoadsAndRetries(t *testing.T) {
	code, err := os.ReadFile(library)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := pathlock.New(ctx, pathlock.Options{URL: redisURL, LibraryCode: string(code)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn, err := redis.Dial("tcp", redisAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Do("FUNCTION", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	ns := newNS(t)
	if _, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/f"}}); err != nil {
		t.Fatalf("acquire after FUNCTION FLUSH: %v", err)
	}
	// Loading again is fine ("already exists"), and discovery finds it.
	if err := c.LoadLibrary(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := pathlock.New(ctx, pathlock.Options{URL: redisURL})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.LibraryName() != c.LibraryName() || !strings.HasPrefix(c.LibraryName(), "pathlock_v4_") {
		t.Fatalf("discovered %q, loaded %q", d.LibraryName(), c.LibraryName())
	}
	info, err := d.Info(ctx)
	if err != nil || info.Name != c.LibraryName() {
		t.Fatalf("info %+v %v", info, err)
	}
}

func TestBackendErrors(t *testing.T) {
	ctx := context.Background()
	_, err := pathlock.New(ctx, pathlock.Options{URL: "redis://127.0.0.1:1", LibraryFile: library})
	if !errors.Is(err, pathlock.ErrBackend) {
		t.Fatalf("want ErrBackend, got %v", err)
	}
	var be *pathlock.BackendError
	if !errors.As(err, &be) {
		t.Fatalf("want *BackendError, got %T", err)
	}
	if _, err := pathlock.New(ctx, pathlock.Options{URL: "http://x"}); !errors.Is(err, pathlock.ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
}
