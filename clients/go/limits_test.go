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

// Limits per namespace (protocol 4.3): the semantics are the engine's
// (tests/conformance/tenant_limits_test.cpp); these check what the Go client
// adds: the over_limit outcome, the admin calls, and the default limits read
// from pl:limits and sent with every acquire.

// overLimit: err is an *OverLimitError naming limit, max and count, and no
// other outcome.
func overLimit(t *testing.T, err error, limit pathlock.LimitKind, max, count int64) {
	t.Helper()
	var over *pathlock.OverLimitError
	if !errors.As(err, &over) || !errors.Is(err, pathlock.ErrOverLimit) {
		t.Fatalf("want an *OverLimitError (%s %d of %d), got %v", limit, count, max, err)
	}
	if *over != (pathlock.OverLimitError{Limit: limit, Max: max, Count: count}) {
		t.Fatalf("got %+v, want %s %d of %d", *over, limit, count, max)
	}
	if errors.Is(err, pathlock.ErrRefused) || errors.Is(err, pathlock.ErrInvalid) || errors.Is(err, pathlock.ErrBackend) {
		t.Fatalf("%v is another outcome too", err)
	}
}

// redisDo runs one command on the test server, outside any client.
func redisDo(t *testing.T, cmd string, args ...interface{}) interface{} {
	t.Helper()
	conn, err := redis.Dial("tcp", redisAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	v, err := conn.Do(cmd, args...)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return v
}

// defaultLimits sets pl:limits for one test and deletes it when the test ends.
func defaultLimits(t *testing.T, text string) {
	t.Helper()
	redisDo(t, "SET", pathlock.DefaultLimitsKey, text)
	t.Cleanup(func() { redisDo(t, "DEL", pathlock.DefaultLimitsKey) })
}

func upload(ns, owner, path string) pathlock.Request {
	return pathlock.Request{Namespace: ns, Owner: owner, Op: "upload", Paths: []string{path}}
}

func TestLimitsOwnLimitOnLocks(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	if err := c.SetLimits(ctx, ns, &pathlock.Limits{Locks: pathlock.Limit(3)}); err != nil {
		t.Fatal(err)
	}
	var held []*pathlock.Lock
	for i := 0; i < 3; i++ {
		held = append(held, acquired(t, c, upload(ns, "alice", fmt.Sprintf("/t/f%d", i))))
	}
	l, err := c.Acquire(ctx, upload(ns, "bob", "/t/more"))
	if l != nil {
		t.Fatal("a lock over the limit")
	}
	overLimit(t, err, pathlock.LimitLocks, 3, 3)
	if locks, err := c.ListAll(ctx, ns, "/t/more"); err != nil || len(locks) != 0 {
		t.Fatalf("the refused request holds %+v (%v)", locks, err)
	}
	// A reentry creates no lock: not limited. The limit is judged before the
	// conflicts: a request that also conflicts is told of the limit.
	again := upload(ns, "alice", "/t/f0")
	again.Reenter = held[0].Proof()
	acquired(t, c, again)
	_, err = c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "carol", Op: "delete_folder", Paths: []string{"/t"}})
	overLimit(t, err, pathlock.LimitLocks, 3, 3)
	s, err := c.Limits(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if s.Own == nil || s.Own.String() != "3 - -" || s.Effective.String() != "3 - -" || !s.Default.None() ||
		s.Locks != 3 || s.Places != 0 || s.OwnerLocks != 3 || s.Owner != "alice" {
		t.Fatalf("status %+v (own %v)", s, s.Own)
	}
	// A lock that goes makes room for one; taken away, no limit is left.
	if _, err := c.Release(ctx, ns, held[1].ID(), held[1].Token()); err != nil {
		t.Fatal(err)
	}
	acquired(t, c, upload(ns, "bob", "/t/more"))
	if err := c.SetLimits(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	acquired(t, c, upload(ns, "bob", "/t/more2"))
	if s, err := c.Limits(ctx, ns); err != nil || s.Own != nil || !s.Effective.None() {
		t.Fatalf("status after SetLimits(nil) %+v %v", s, err)
	}
}

func TestLimitsOwnerLocks(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	if err := c.SetLimits(ctx, ns, &pathlock.Limits{OwnerLocks: pathlock.Limit(2)}); err != nil {
		t.Fatal(err)
	}
	acquired(t, c, upload(ns, "alice", "/o/1"))
	acquired(t, c, upload(ns, "alice", "/o/2"))
	_, err := c.Acquire(ctx, upload(ns, "alice", "/o/3"))
	overLimit(t, err, pathlock.LimitOwnerLocks, 2, 2)
	acquired(t, c, upload(ns, "bob", "/o/3"))
}

func TestLimitsWaitingAcquireIsAnsweredAtOnce(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	if err := c.SetLimits(ctx, ns, &pathlock.Limits{Locks: pathlock.Limit(1)}); err != nil {
		t.Fatal(err)
	}
	acquired(t, c, upload(ns, "alice", "/a/1"))
	req := upload(ns, "bob", "/a/2")
	req.Wait = 20 * time.Second
	start := time.Now()
	_, err := c.Acquire(ctx, req)
	overLimit(t, err, pathlock.LimitLocks, 1, 1)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("answered after %v, not at once", d)
	}
	waitInLine(t, c, ns, 0)
}

func TestLimitsPlacesInLine(t *testing.T) {
	c, ns, holder := folderHeld(t, "/p")
	ctx := context.Background()
	if err := c.SetLimits(ctx, ns, &pathlock.Limits{Places: pathlock.Limit(1)}); err != nil {
		t.Fatal(err)
	}
	first := upload(ns, "bob", "/p/x")
	first.Wait = time.Minute
	done := acquiring(ctx, c, first)
	waitInLine(t, c, ns, 1)
	// A second fair waiter would be a second place: refused now, not after its wait.
	second := upload(ns, "carol", "/p/y")
	second.Wait = 20 * time.Second
	start := time.Now()
	_, err := c.Acquire(ctx, second)
	overLimit(t, err, pathlock.LimitPlaces, 1, 1)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("answered after %v, not at once", d)
	}
	waitInLine(t, c, ns, 1)
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil {
		t.Fatalf("the first waiter: %v", r.err)
	}
}

func TestLimitsDefaultFromTheKey(t *testing.T) {
	defaultLimits(t, "2 - -")
	c := newClient(t) // reads pl:limits on its first acquire
	ctx := context.Background()
	ns, own := newNS(t), newNS(t)
	if err := c.SetLimits(ctx, own, &pathlock.Limits{}); err != nil { // its own limits: none
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		acquired(t, c, upload(ns, "alice", fmt.Sprintf("/d/%d", i)))
	}
	_, err := c.Acquire(ctx, upload(ns, "alice", "/d/2"))
	overLimit(t, err, pathlock.LimitLocks, 2, 2)
	for i := 0; i < 3; i++ {
		acquired(t, c, upload(own, "alice", fmt.Sprintf("/d/%d", i)))
	}
	s, err := c.Limits(ctx, ns)
	if err != nil || s.Own != nil || s.Default.String() != "2 - -" || s.Effective.String() != "2 - -" || s.Locks != 2 {
		t.Fatalf("status %+v %v", s, err)
	}
}

// The default is read at most every DefaultLimitsRefresh: a change within it
// is not seen; a stale reading is read again.
func TestLimitsDefaultIsCached(t *testing.T) {
	redisDo(t, "DEL", pathlock.DefaultLimitsKey)
	c := newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	acquired(t, c, upload(ns, "alice", "/c/0")) // reads: no default
	defaultLimits(t, "1 - -")
	gets := getCalls(t)
	for i := 1; i <= 5; i++ {
		acquired(t, c, upload(ns, "alice", fmt.Sprintf("/c/%d", i)))
	}
	if n := getCalls(t) - gets; n != 0 {
		t.Fatalf("%d GETs of pl:limits within %v", n, pathlock.DefaultLimitsRefresh)
	}
	pathlock.ExpireDefaultLimits(c)
	_, err := c.Acquire(ctx, upload(ns, "alice", "/c/6"))
	overLimit(t, err, pathlock.LimitLocks, 1, 6)
	// This client's own setting applies to it at once.
	if err := c.SetDefaultLimits(ctx, pathlock.Limits{}); err != nil {
		t.Fatal(err)
	}
	acquired(t, c, upload(ns, "alice", "/c/6"))
	if v := redisDo(t, "EXISTS", pathlock.DefaultLimitsKey); v != int64(0) {
		t.Fatalf("SetDefaultLimits(none) left the key (EXISTS %v)", v)
	}
	if err := c.SetDefaultLimits(ctx, pathlock.Limits{Locks: pathlock.Limit(7)}); err != nil {
		t.Fatal(err)
	}
	if v, _ := redis.String(redisDo(t, "GET", pathlock.DefaultLimitsKey), nil); v != "7 - -" {
		t.Fatalf("pl:limits is %q", v)
	}
}

// getCalls: how many GETs the server has run (INFO commandstats).
func getCalls(t *testing.T) int {
	t.Helper()
	info, _ := redis.String(redisDo(t, "INFO", "commandstats"), nil)
	for _, line := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(line, "cmdstat_get:calls=") {
			var n int
			fmt.Sscanf(strings.TrimPrefix(line, "cmdstat_get:calls="), "%d", &n)
			return n
		}
	}
	return 0
}

// A user who may not GET pl:limits gets no default, and one warning.
func TestLimitsDefaultUnreadable(t *testing.T) {
	defaultLimits(t, "0 - -")
	user := fmt.Sprintf("nolimits%d", time.Now().UnixNano())
	redisDo(t, "ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-get")
	t.Cleanup(func() { redisDo(t, "ACL", "DELUSER", user) })
	var mu sync.Mutex
	var warnings []string
	c := connect(t, pathlock.Options{URL: "redis://" + user + ":pw@" + redisAddr, Warn: func(s string) {
		mu.Lock()
		warnings = append(warnings, s)
		mu.Unlock()
	}})
	ns := newNS(t)
	acquired(t, c, upload(ns, "alice", "/n/1"))
	pathlock.ExpireDefaultLimits(c)
	acquired(t, c, upload(ns, "alice", "/n/2"))
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "may not GET pl:limits") {
		t.Fatalf("warnings %q", warnings)
	}
}

func TestLimitsText(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	for _, bad := range []pathlock.Limits{{Locks: pathlock.Limit(pathlock.MaxLimit + 1)}, {OwnerLocks: pathlock.Limit(-1)}} {
		if err := c.SetLimits(ctx, newNS(t), &bad); !errors.Is(err, pathlock.ErrInvalid) {
			t.Errorf("SetLimits(%v): want ErrInvalid, got %v", bad, err)
		}
		if err := c.SetDefaultLimits(ctx, bad); !errors.Is(err, pathlock.ErrInvalid) {
			t.Errorf("SetDefaultLimits(%v): want ErrInvalid, got %v", bad, err)
		}
	}
	if err := c.SetLimits(ctx, "bad ns", nil); !errors.Is(err, pathlock.ErrInvalid) {
		t.Errorf("a bad namespace: %v", err)
	}
	for _, text := range []string{"3 - -", "- 0 1000000000", "- - -"} {
		l, err := pathlock.ParseLimits(text)
		if err != nil || l.String() != text {
			t.Errorf("ParseLimits(%q) = %v, %v", text, l, err)
		}
	}
	for _, text := range []string{"", "3", "3 - - -", "a - -", "1000000001 - -", "-1 - -", " 3 - -"} {
		if _, err := pathlock.ParseLimits(text); !errors.Is(err, pathlock.ErrInvalid) {
			t.Errorf("ParseLimits(%q): want ErrInvalid, got %v", text, err)
		}
	}
}
