package pathlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"pathlock.dev/pathlock"
)

// Deadlines honoured in flight (issue 41): each test stalls its own
// redis-server, with CLIENT PAUSE (commands wait; the server reads them) or
// a busy script (the server reads nothing until the script ends).

// returnBound: how long after its deadline a call may return in these tests
// (the documented margin is DeadlineMargin; this allows a loaded machine).
// The stalls last seconds, so a call that waits for the server fails it.
const returnBound = 700 * time.Millisecond

// stalledServer: a redis-server of its own, a client of it, and an
// observer connection.
func stalledServer(t *testing.T, opts pathlock.Options) (*pathlock.Client, redis.Conn, string) {
	t.Helper()
	addr := loopback(serveTestenv(t, "redis", nil).Port)
	opts.URL = "redis://" + addr
	c := connect(t, opts)
	obs, err := redis.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { obs.Close() })
	return c, obs, addr
}

// pause: CLIENT PAUSE ALL for d; the returned function waits until the
// server answers again.
func pause(t *testing.T, obs redis.Conn, d time.Duration) func() {
	t.Helper()
	if _, err := obs.Do("CLIENT", "PAUSE", d.Milliseconds(), "ALL"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := obs.Do("PING"); err != nil {
			t.Fatal(err)
		}
	}
}

const busyScript = `local t0 = redis.call('TIME')
local start = t0[1] * 1000000 + t0[2]
repeat local t = redis.call('TIME') until t[1] * 1000000 + t[2] - start >= tonumber(ARGV[1]) * 1000
return 1`

// busy runs a script that keeps the server busy for d and returns once the
// server has stopped answering; the returned function waits for the end.
func busy(t *testing.T, addr string, d time.Duration) func() {
	t.Helper()
	script, err := redis.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := script.Send("EVAL", busyScript, 0, d.Milliseconds()); err != nil || script.Flush() != nil {
		t.Fatal("cannot start the busy script", err)
	}
	// The sync point: a PING on another connection that gets no answer.
	probe, err := redis.Dial("tcp", addr, redis.DialReadTimeout(30*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	for i := 0; ; i++ {
		if _, err := probe.Do("PING"); err != nil {
			break
		}
		if i > 1000 {
			t.Fatal("the server never got busy")
		}
	}
	return func() {
		defer script.Close()
		if _, err := script.Receive(); err != nil {
			t.Fatal("busy script:", err)
		}
	}
}

// Every call returns at its deadline (or cancellation) while the server is
// paused, with an error for which errors.Is(err, context.DeadlineExceeded)
// holds. Before issue 41, Held answered after the pause with err == nil.
func TestCallsReturnAtDeadlineOnStalledServer(t *testing.T) {
	c, obs, _ := stalledServer(t, pathlock.Options{})
	ns := newNS(t)
	holder := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/h"}, TTL: time.Minute})
	bg := context.Background()
	calls := map[string]func(ctx context.Context) error{
		"acquire": func(ctx context.Context) error {
			_, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/a"}})
			return err
		},
		"acquire waiting": func(ctx context.Context) error {
			_, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/h"}, Wait: time.Minute})
			return err
		},
		"held":    func(ctx context.Context) error { _, err := holder.Held(ctx); return err },
		"renew":   func(ctx context.Context) error { _, err := holder.Renew(ctx, 0); return err },
		"release": func(ctx context.Context) error { _, err := c.Release(ctx, ns, "nosuchid", "t"); return err },
		"list":    func(ctx context.Context) error { _, err := c.ListAll(ctx, ns, "/"); return err },
		"waiters": func(ctx context.Context) error { _, err := c.Waiters(ctx, ns, "/", 10); return err },
		"info":    func(ctx context.Context) error { _, err := c.Info(ctx); return err },
	}
	resume := pause(t, obs, 3*time.Second)
	var wg sync.WaitGroup
	for name, call := range calls {
		for _, cancelled := range []bool{false, true} {
			name, call, cancelled := name, call, cancelled
			wg.Add(1)
			go func() {
				defer wg.Done()
				stallCall(t, name, call, cancelled)
			}()
		}
	}
	wg.Wait()
	resume()
	if ok, err := holder.Held(bg); err != nil || !ok {
		t.Fatalf("after the pause: held %v %v", ok, err)
	}
}

// stallCall runs call with a 300 ms deadline (or a cancellation after
// 300 ms) and checks when and how it returned.
func stallCall(t *testing.T, name string, call func(context.Context) error, cancelled bool) {
	const limit = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	want := context.DeadlineExceeded
	if cancelled {
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(limit, cancel)
		want = context.Canceled
	}
	defer cancel()
	start := time.Now()
	err := call(ctx)
	took := time.Since(start)
	if !errors.Is(err, want) {
		t.Errorf("%s (cancelled %v): want %v, got %v", name, cancelled, want, err)
	}
	if took > limit+returnBound {
		t.Errorf("%s (cancelled %v): returned after %v; the limit was %v", name, cancelled, took, limit)
	}
}

// An acquire the server runs after its caller's deadline grants nothing
// (deadline_ms): the next lock's fence follows the holder's directly.
func TestLateAcquireGrantsNothing(t *testing.T) {
	c, obs, addr := stalledServer(t, pathlock.Options{})
	ns := newNS(t)
	bg := context.Background()
	first := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/h"}, TTL: time.Minute})
	done := busy(t, addr, 1500*time.Millisecond)
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/late"}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 300*time.Millisecond+returnBound {
		t.Fatalf("want DeadlineExceeded at 300 ms, got %v after %v", err, time.Since(start))
	}
	done()
	if _, err := obs.Do("PING"); err != nil {
		t.Fatal(err)
	}
	if n := fcallsRun(t, obs); n < 2 { // the first acquire and the late one
		t.Fatalf("only %d FCALLs ran: the late acquire never reached the server", n)
	}
	locks, err := c.ListAll(bg, ns, "/")
	if err != nil || len(locks) != 1 || locks[0].ID != first.ID() {
		t.Fatalf("a late acquire left a lock: %+v %v", locks, err)
	}
	if f := lastFence(t, obs, ns); f != first.Fence() {
		t.Fatalf("the namespace's last fence is %d, the first lock's %d: the late acquire granted", f, first.Fence())
	}
}

// fcallsRun: how many FCALLs the server ran (INFO commandstats).
func fcallsRun(t *testing.T, obs redis.Conn) int {
	t.Helper()
	info, err := redis.String(obs.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if i := strings.Index(info, "cmdstat_fcall:calls="); i >= 0 {
		fmt.Sscanf(info[i+len("cmdstat_fcall:calls="):], "%d", &n)
	}
	return n
}

// lastFence: the last fence the namespace issued (meta.fence).
func lastFence(t *testing.T, obs redis.Conn, ns string) uint64 {
	t.Helper()
	f, err := redis.Uint64(obs.Do("HGET", "pl:{"+ns+"}:meta", "fence"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A grant whose reply arrives after its caller gave up (cancelled, no
// deadline) is released when the reply comes.
func TestGrantAfterCancelIsReleased(t *testing.T) {
	c, obs, _ := stalledServer(t, pathlock.Options{})
	ns := newNS(t)
	bg := context.Background()
	first := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/h"}, TTL: time.Minute})
	resume := pause(t, obs, time.Second)
	ctx, cancel := context.WithCancel(bg)
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/x"}, TTL: time.Minute})
	var ce *pathlock.ContextError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ce) || !ce.Sent {
		t.Fatalf("want a sent call cancelled, got %v", err)
	}
	resume()
	eventually(t, "the late grant released", func() bool {
		locks, err := c.ListAll(bg, ns, "/")
		return err == nil && len(locks) == 1
	})
	if f := lastFence(t, obs, ns); f <= first.Fence() {
		t.Fatalf("last fence %d, the first lock's %d: the cancelled acquire was never granted", f, first.Fence())
	}
}

// An acquire with an IdempotencyKey whose reply is lost (the read times out
// while the server is busy) is sent again and gets its lock; one without a
// key fails and, run late, grants nothing.
func TestKeyedAcquireRetriedAfterLostReply(t *testing.T) {
	c, obs, addr := stalledServer(t, pathlock.Options{ReadTimeout: 400 * time.Millisecond})
	ns := newNS(t)
	bg := context.Background()
	// The client reads the default limits first (then at most every 5 s),
	// so that the reply lost below is the acquire's own.
	acquired(t, c, pathlock.Request{Namespace: newNS(t), Owner: "a", Op: "upload", Paths: []string{"/w"}})
	done := busy(t, addr, 900*time.Millisecond)
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/k"}, IdempotencyKey: "k1"})
	done()
	if err != nil {
		t.Fatalf("keyed acquire: %v", err)
	}
	done = busy(t, addr, 900*time.Millisecond)
	_, err = c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/n"}})
	done()
	if !errors.Is(err, pathlock.ErrBackend) {
		t.Fatalf("an acquire without a key after a lost reply: want ErrBackend, got %v", err)
	}
	if _, err := obs.Do("PING"); err != nil {
		t.Fatal(err)
	}
	locks, err := c.ListAll(bg, ns, "/")
	if err != nil || len(locks) != 1 || locks[0].ID != l.ID() {
		t.Fatalf("locks %+v %v", locks, err)
	}
}

// A server paused past the lease: the keeper's renewals get no answer, and
// its Context ends at the lease's end, while the server is still paused.
func TestKeeperContextEndsWhenLeaseRunsOutOnStalledServer(t *testing.T) {
	c, obs, _ := stalledServer(t, pathlock.Options{})
	ns := newNS(t)
	bg := context.Background()
	l := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "k", Op: "upload", Paths: []string{"/k"}, TTL: 600 * time.Millisecond})
	k := l.Keep(bg, pathlock.KeepOptions{Every: 200 * time.Millisecond})
	resume := pause(t, obs, 4*time.Second)
	resumed := make(chan struct{})
	go func() {
		resume()
		close(resumed)
	}()
	select {
	case <-k.Context().Done():
	case <-resumed:
		t.Fatal("the lease ran out during the pause, but the keeper's context lasted until the server answered again")
	}
	if !errors.Is(k.Err(), pathlock.ErrLeaseLost) || !errors.Is(k.Err(), context.DeadlineExceeded) {
		t.Fatalf("keeper error %v", k.Err())
	}
	<-k.Lost()
	<-resumed
	if ok, err := l.Held(bg); err != nil || ok {
		t.Fatalf("the lost lease is still held: %v %v", ok, err)
	}
}
