package pathlock_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
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
