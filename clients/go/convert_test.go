package pathlock_test

// Conversion (docs/design.md#conversion): a copy converted to a move once
// the upload in its source ends, refusals that change nothing, a waiting
// conversion listed with its lock and granted by a release, two converters
// that would wait for each other, a cancel before and after the grant, a
// keyed conversion sent again after a lost reply, and a conversion the C++
// engine sees.

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"pathlock.dev/pathlock"
)

// limited: the context of one test's calls, ended after 30 s: a call (or a
// conversion's wait) that never answers fails the test then.
func limited(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// listed: lock id as List shows it (the test fails when it is not live).
func listed(t *testing.T, c *pathlock.Client, ns, id string) pathlock.LockInfo {
	t.Helper()
	locks, err := c.ListAll(context.Background(), ns, "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locks {
		if l.ID == id {
			return l
		}
	}
	t.Fatalf("lock %s is not listed: %+v", id, locks)
	return pathlock.LockInfo{}
}

// unchanged fails the test when lock id is no longer as before was listed
// (its lease left aside, which runs down).
func unchanged(t *testing.T, c *pathlock.Client, ns string, before pathlock.LockInfo) {
	t.Helper()
	after := listed(t, c, ns, before.ID)
	after.ExpiresIn = before.ExpiresIn
	if !equalInfo(after, before) {
		t.Fatalf("the lock changed: %+v, was %+v", after, before)
	}
}

func equalInfo(a, b pathlock.LockInfo) bool {
	if len(a.Targets) != len(b.Targets) {
		return false
	}
	for i := range a.Targets {
		if a.Targets[i] != b.Targets[i] {
			return false
		}
	}
	a.Targets, b.Targets = nil, nil
	return a.ID == b.ID && a.Owner == b.Owner && a.Op == b.Op && a.Fence == b.Fence && a.Holds == b.Holds &&
		a.ExpiresIn == b.ExpiresIn
}

// converting starts l.Convert in a goroutine; its error arrives on the
// channel (buffered: the goroutine never blocks on a test that stopped).
func converting(ctx context.Context, l *pathlock.Lock, conv pathlock.Conversion) chan error {
	done := make(chan error, 1)
	go func() { done <- l.Convert(ctx, conv) }()
	return done
}

// The worked example: a copy holds copy_folder while an upload lands in its
// source; its conversion to move_folder is refused while the upload holds,
// leaving the lock as it was, and granted after: the same id and token, a
// higher fence, and from then on no upload gets into the source.
func TestConvertCopyThenMove(t *testing.T) {
	c := newClient(t)
	ctx := limited(t)
	ns := newNS(t)
	cp := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "svc", Op: "copy_folder", Paths: []string{"/p/A", "/q/A"}, TTL: time.Minute})
	up := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "u", Op: "upload", Paths: []string{"/p/A/f"}})
	before, fence := listed(t, c, ns, cp.ID()), cp.Fence()
	toMove := pathlock.Conversion{Op: "move_folder", Paths: []string{"/p/A", "/q/A"}, TTL: 2 * time.Minute}
	err := cp.Convert(ctx, toMove)
	var refused *pathlock.RefusedError
	if !errors.As(err, &refused) || refused.WouldDeadlock || errors.Is(err, pathlock.ErrWouldDeadlock) ||
		refused.Conflict.ID != up.ID() || refused.Conflict.Relation != pathlock.HeldDescendant {
		t.Fatalf("want refused by the upload, got %v", err)
	}
	unchanged(t, c, ns, before)
	if cp.Fence() != fence {
		t.Fatalf("a refusal changed the Lock's fence: %d, was %d", cp.Fence(), fence)
	}
	if err := up.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cp.Convert(ctx, toMove); err != nil {
		t.Fatalf("convert after the upload: %v", err)
	}
	if cp.ID() != before.ID || cp.Fence() <= up.Fence() || cp.Holds() != 1 || cp.ExpiresIn() != 2*time.Minute {
		t.Fatalf("converted: id %s fence %d holds %d lease %v; was %s, fence %d (the upload's %d)",
			cp.ID(), cp.Fence(), cp.Holds(), cp.ExpiresIn(), before.ID, fence, up.Fence())
	}
	now := listed(t, c, ns, cp.ID())
	if now.Op != "move_folder" || now.Fence != cp.Fence() || now.Targets[0] != (pathlock.Target{Role: "src", Path: "/p/A"}) {
		t.Fatalf("listed %+v", now)
	}
	_, err = c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "u", Op: "upload", Paths: []string{"/p/A/g"}})
	if !errors.As(err, &refused) || refused.Conflict.ID != cp.ID() {
		t.Fatalf("an upload into the moved source: want refused by the move, got %v", err)
	}
	if ok, err := cp.Held(ctx); err != nil || !ok {
		t.Fatalf("the proof after the conversion: held %v %v", ok, err)
	}
}

// A wrong token is ErrNotHolder; bad input and a lock of two holds are
// ErrInvalid; none of them changes the lock.
func TestConvertRefusalsChangeNothing(t *testing.T) {
	c := newClient(t)
	ctx := limited(t)
	ns := newNS(t)
	l := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/n/f"}, TTL: time.Minute})
	before := listed(t, c, ns, l.ID())
	toDelete := pathlock.Conversion{Op: "delete_file", Paths: []string{"/n/f"}}
	if _, err := c.Convert(ctx, ns, pathlock.Proof{ID: l.ID(), Token: l.Token() + "x"}, toDelete); !errors.Is(err, pathlock.ErrNotHolder) {
		t.Fatalf("a wrong token: want ErrNotHolder, got %v", err)
	}
	for name, conv := range map[string]pathlock.Conversion{
		"no operation":      {Paths: []string{"/n/f"}},
		"unknown operation": {Op: "no_such_op", Paths: []string{"/n/f"}},
		"no path":           {Op: "delete_file"},
		"a relative path":   {Op: "delete_file", Paths: []string{"n/f"}},
		"a path too few":    {Op: "move_file", Paths: []string{"/n/f"}},
		"a TTL over a week": {Op: "delete_file", Paths: []string{"/n/f"}, TTL: 8 * 24 * time.Hour},
		"a negative wait":   {Op: "delete_file", Paths: []string{"/n/f"}, Wait: -time.Second},
		"a bad key":         {Op: "delete_file", Paths: []string{"/n/f"}, IdempotencyKey: "a key"},
	} {
		if err := l.Convert(ctx, conv); !errors.Is(err, pathlock.ErrInvalid) {
			t.Fatalf("%s: want ErrInvalid, got %v", name, err)
		}
	}
	unchanged(t, c, ns, before)
	again := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/n/f"}, Reenter: l.Proof()})
	if err := l.Convert(ctx, toDelete); !errors.Is(err, pathlock.ErrInvalid) || !strings.Contains(err.Error(), "holds") {
		t.Fatalf("a lock of two holds: want ErrInvalid, got %v", err)
	}
	before.Holds = again.Holds()
	unchanged(t, c, ns, before)
}

// A waiting conversion keeps a place in line that names its lock, and a
// release lets it in.
func TestConvertWaitsInLine(t *testing.T) {
	c := newClient(t)
	ctx := limited(t)
	ns := newNS(t)
	blocker := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/w/x"}, TTL: time.Minute})
	mine := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/w/y"}, TTL: time.Minute})
	done := converting(ctx, mine, pathlock.Conversion{Op: "delete_folder", Paths: []string{"/w"}, Wait: 20 * time.Second})
	ws := waitInLine(t, c, ns, 1)
	if w := ws[0]; w.Converts != mine.ID() || w.Owner != "b" || w.Op != "delete_folder" || w.Targets[0].Path != "/w" {
		t.Fatalf("waiter %+v", w)
	}
	if err := blocker.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting conversion: %v", err)
	}
	if mine.Fence() <= blocker.Fence() || listed(t, c, ns, mine.ID()).Op != "delete_folder" {
		t.Fatalf("converted: fence %d after %d, %+v", mine.Fence(), blocker.Fence(), listed(t, c, ns, mine.ID()))
	}
	waitInLine(t, c, ns, 0)
}

// Two uploads of one file each convert to delete_folder, which the other
// refuses: the first waits, the second is answered would_deadlock at once,
// unchanged and out of line; the first gets in when the second goes.
func TestConvertWouldDeadlock(t *testing.T) {
	c := newClient(t)
	ctx := limited(t)
	ns := newNS(t)
	a := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/d/x"}, TTL: time.Minute})
	b := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/d/x"}, TTL: time.Minute})
	toDelete := pathlock.Conversion{Op: "delete_folder", Paths: []string{"/d/x"}, Wait: 20 * time.Second}
	done := converting(ctx, a, toDelete)
	if ws := waitInLine(t, c, ns, 1); ws[0].Converts != a.ID() {
		t.Fatalf("waiter %+v", ws[0])
	}
	before := listed(t, c, ns, b.ID())
	err := b.Convert(ctx, toDelete)
	var refused *pathlock.RefusedError
	if !errors.Is(err, pathlock.ErrWouldDeadlock) || !errors.Is(err, pathlock.ErrRefused) || !errors.As(err, &refused) ||
		!refused.WouldDeadlock || refused.Conflict.ID != a.ID() || refused.Conflict.Queued {
		t.Fatalf("want would_deadlock naming a's lock, got %v", err)
	}
	unchanged(t, c, ns, before)
	if ws := waitInLine(t, c, ns, 1); ws[0].Converts != a.ID() {
		t.Fatalf("the line after would_deadlock: %+v", ws)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || a.Fence() <= b.Fence() {
		t.Fatalf("the first conversion: %v, fence %d", err, a.Fence())
	}
}

// A conversion cancelled while it waits leaves its lock as it was and the
// line empty.
func TestConvertCancelledWhileWaiting(t *testing.T) {
	c := newClient(t)
	ctx := limited(t)
	ns := newNS(t)
	acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/c/x"}, TTL: time.Minute})
	mine := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/c/y"}, TTL: time.Minute})
	before, fence := listed(t, c, ns, mine.ID()), mine.Fence()
	waiting, cancel := context.WithCancel(ctx)
	done := converting(waiting, mine, pathlock.Conversion{Op: "delete_folder", Paths: []string{"/c"}, Wait: 20 * time.Second})
	waitInLine(t, c, ns, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if ws, err := c.Waiters(ctx, ns, "/", 10); err != nil || len(ws) != 0 {
		t.Fatalf("still in line: %+v %v", ws, err)
	}
	unchanged(t, c, ns, before)
	if mine.Fence() != fence {
		t.Fatalf("the Lock's fence changed: %d, was %d", mine.Fence(), fence)
	}
}

// A conversion granted as its context is cancelled stays made (unlike an
// acquire's grant, which is released): Convert returns it.
func TestConvertGrantRacingCancelIsKept(t *testing.T) {
	c := newClient(t)
	ctx := limited(t)
	ns := newNS(t)
	blocker := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/r/x"}, TTL: time.Minute})
	mine := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/r/y"}, TTL: time.Minute})
	waiting, cancel := context.WithCancel(ctx)
	pathlock.SetAfterAttempt(c, func(granted bool) {
		if granted {
			cancel() // the cancel lands between the grant's reply and the loop's look
		}
	})
	done := converting(waiting, mine, pathlock.Conversion{Op: "delete_folder", Paths: []string{"/r"}, Wait: 20 * time.Second})
	waitInLine(t, c, ns, 1)
	if err := blocker.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || waiting.Err() == nil {
		t.Fatalf("want the conversion returned despite the cancel: %v (ctx %v)", err, waiting.Err())
	}
	if l := listed(t, c, ns, mine.ID()); l.Op != "delete_folder" || l.Fence != mine.Fence() {
		t.Fatalf("listed %+v, the Lock's fence %d", l, mine.Fence())
	}
	waitInLine(t, c, ns, 0)
}

// A keyed conversion whose reply is lost (the read times out while the
// server is busy) is sent again and converts; one without a key fails and,
// run late, changes nothing.
func TestKeyedConversionRetriedAfterLostReply(t *testing.T) {
	c, obs, addr := stalledServer(t, pathlock.Options{ReadTimeout: 400 * time.Millisecond})
	ns := newNS(t)
	ctx := limited(t)
	// Read the default limits and the contract first, so that the reply
	// lost below is the conversion's own.
	l := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/k/f"}, TTL: time.Minute})
	fence := l.Fence()
	done := busy(t, addr, 900*time.Millisecond)
	err := l.Convert(ctx, pathlock.Conversion{Op: "delete_file", Paths: []string{"/k/f"}, IdempotencyKey: "c1"})
	done()
	if err != nil || l.Fence() <= fence {
		t.Fatalf("keyed conversion: %v, fence %d after %d", err, l.Fence(), fence)
	}
	before := listed(t, c, ns, l.ID())
	done = busy(t, addr, 900*time.Millisecond)
	err = l.Convert(ctx, pathlock.Conversion{Op: "upload", Paths: []string{"/k/f"}})
	done()
	if !errors.Is(err, pathlock.ErrBackend) {
		t.Fatalf("a conversion without a key after a lost reply: want ErrBackend, got %v", err)
	}
	if _, err := obs.Do("PING"); err != nil {
		t.Fatal(err)
	}
	unchanged(t, c, ns, before)
}

// A lock the Go client converts is converted for the C++ engine: it lists
// the new operation and fence, and refuses what the new operation refuses.
func TestConvertSeenByCpp(t *testing.T) {
	c := newClient(t)
	ctx := limited(t)
	ns := newNS(t)
	cpp := startCpp(t, ns)
	l := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "go", Op: "upload", Paths: []string{"/i/f"}, TTL: time.Minute})
	if err := l.Convert(ctx, pathlock.Conversion{Op: "delete_folder", Paths: []string{"/i/h"}}); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Locks []struct {
			ID      string            `json:"id"`
			Op      string            `json:"op"`
			Fence   uint64            `json:"fence"`
			Targets map[string]string `json:"targets"`
		} `json:"locks"`
	}
	if err := json.Unmarshal([]byte(cpp.do(t, "locks /i/h")), &list); err != nil || len(list.Locks) != 1 {
		t.Fatalf("C++ locks: %+v %v", list, err)
	}
	if got := list.Locks[0]; got.ID != l.ID() || got.Op != "delete_folder" || got.Fence != l.Fence() || got.Targets["target"] != "/i/h" {
		t.Fatalf("C++ sees %+v; the Go lock: %s fence %d", got, l.ID(), l.Fence())
	}
	if got := cpp.do(t, "acquire cpp upload /i/h/x"); !strings.Contains(got, `"granted":false`) || !strings.Contains(got, l.ID()) {
		t.Fatalf("C++ not refused by the converted lock: %s", got)
	}
}

// A Keeper started on a one-minute lock renews a third of the TTL apart; the
// lock converted to a 600 ms TTL is then kept at a third of that, so it
// outlives several of its new leases (at the old pace it was lost after
// 600 ms).
func TestKeeperTakesTheConvertedTTL(t *testing.T) {
	c := newClient(t)
	ctx := limited(t)
	ns := newNS(t)
	l := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "svc", Op: "copy_folder", Paths: []string{"/p/A", "/q/A"}, TTL: time.Minute})
	k := l.Keep(ctx, pathlock.KeepOptions{})
	defer k.Stop()
	if err := l.Convert(ctx, pathlock.Conversion{Op: "move_folder", Paths: []string{"/p/A", "/q/A"}, TTL: 600 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-k.Lost():
		t.Fatalf("lost after the conversion: %v", k.Err())
	case <-time.After(2 * time.Second):
	}
	if ok, err := l.Held(ctx); err != nil || !ok {
		t.Fatalf("kept across the conversion: held %v %v", ok, err)
	}
	if left := listed(t, c, ns, l.ID()).ExpiresIn; left > 600*time.Millisecond {
		t.Fatalf("renewed with the old TTL: %v left", left)
	}
}

// blockerIDs: the ids of a Blockers answer, sorted (the test fails on an
// error or a truncated answer); it takes the answer whole:
// blockerIDs(t)(c.Blockers(...)).
func blockerIDs(t *testing.T) func([]pathlock.Blocker, bool, error) []string {
	return func(rows []pathlock.Blocker, truncated bool, err error) []string {
		t.Helper()
		if err != nil || truncated {
			t.Fatalf("blockers: %+v truncated %v, %v", rows, truncated, err)
		}
		ids := make([]string, 0, len(rows))
		for _, b := range rows {
			ids = append(ids, b.ID)
		}
		sort.Strings(ids)
		return ids
	}
}

func sortedIDs(ids ...string) []string {
	sort.Strings(ids)
	return ids
}

// The dry run of a conversion (ConversionBlockers, protocol 4.6): the copy
// converting to a move is refused by the upload in its source only, not by
// itself, nor by the delete waiting for it; the dry run of a lock elsewhere
// (and of an unknown id) lists the waiter too, unless Unfair.
func TestConversionBlockers(t *testing.T) {
	c := newClient(t)
	ctx := limited(t)
	ns := newNS(t)
	cp := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "svc", Op: "copy_folder", Paths: []string{"/p/A", "/q/A"}, TTL: time.Minute})
	up := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "u", Op: "upload", Paths: []string{"/p/A/x"}, TTL: time.Minute})
	other := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "o", Op: "upload", Paths: []string{"/r/z"}, TTL: time.Minute})
	waiting, cancel := context.WithCancel(ctx)
	defer cancel()
	done := acquiring(waiting, c, pathlock.Request{Namespace: ns, Owner: "d", Op: "delete_folder", Paths: []string{"/p/A"}, Wait: 20 * time.Second})
	w := waitInLine(t, c, ns, 1)[0]
	toMove := pathlock.Conversion{Op: "move_folder", Paths: []string{"/p/A", "/q/A"}}
	all := sortedIDs(cp.ID(), up.ID(), w.ID)
	if got := blockerIDs(t)(c.Blockers(ctx, ns, toMove.Op, toMove.Paths, 100)); !reflect.DeepEqual(got, all) {
		t.Fatalf("plain blockers: %v, want %v", got, all)
	}
	if got := blockerIDs(t)(cp.ConversionBlockers(ctx, toMove, 100)); !reflect.DeepEqual(got, []string{up.ID()}) {
		t.Fatalf("the copy's dry run: %v, want the upload %s only", got, up.ID())
	}
	if got := blockerIDs(t)(c.ConversionBlockers(ctx, ns, other.ID(), toMove, 100)); !reflect.DeepEqual(got, all) {
		t.Fatalf("a lock elsewhere: %v, want %v", got, all)
	}
	unfair := toMove
	unfair.Unfair = true
	if got := blockerIDs(t)(c.ConversionBlockers(ctx, ns, other.ID(), unfair, 100)); !reflect.DeepEqual(got, sortedIDs(cp.ID(), up.ID())) {
		t.Fatalf("unfair: %v, want the held locks only", got)
	}
	if got := blockerIDs(t)(c.ConversionBlockers(ctx, ns, "no-such-lock", toMove, 100)); !reflect.DeepEqual(got, all) {
		t.Fatalf("an unknown id: %v, want %v", got, all)
	}
	for _, id := range []string{"", "not_an_id", strings.Repeat("a", 65)} {
		if _, _, err := c.ConversionBlockers(ctx, ns, id, toMove, 100); !errors.Is(err, pathlock.ErrInvalid) {
			t.Fatalf("id %q: want ErrInvalid, got %v", id, err)
		}
	}
	if _, _, err := cp.ConversionBlockers(ctx, toMove, 0); !errors.Is(err, pathlock.ErrInvalid) {
		t.Fatalf("limit 0: want ErrInvalid, got %v", err)
	}
	cancel()
	if r := <-done; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the waiting delete: %v", r.err)
	}
}
