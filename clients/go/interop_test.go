package pathlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"pathlock.dev/pathlock"
)

// The Go client and the C++ engine share one lock table: each refuses the
// other where the matrix says, lists the other's locks, and a release on one
// side wakes a waiter on the other.
func TestInteropWithCppShell(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := newNS(t)
	cpp := startCpp(t, ns)

	// C++ holds; Go is refused, naming the C++ lock, and lists it.
	var g struct {
		Granted bool   `json:"granted"`
		ID      string `json:"id"`
		Token   string `json:"token"`
		Fence   uint64 `json:"fence"`
	}
	if err := json.Unmarshal([]byte(cpp.do(t, "acquire cpp delete_folder /i ttl=60000")), &g); err != nil || !g.Granted {
		t.Fatalf("C++ acquire: %+v %v", g, err)
	}
	_, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "go", Op: "upload", Paths: []string{"/i/x"}})
	var refused *pathlock.RefusedError
	if !errors.As(err, &refused) || refused.Conflict.ID != g.ID || refused.Conflict.Owner != "cpp" || refused.Conflict.Relation != pathlock.HeldAncestor {
		t.Fatalf("want refused by the C++ lock, got %v", err)
	}
	locks, err := c.ListAll(ctx, ns, "/")
	if err != nil || len(locks) != 1 || locks[0].ID != g.ID || locks[0].Fence != g.Fence {
		t.Fatalf("list %+v %v", locks, err)
	}
	// Go waits; the C++ release wakes it.
	done := acquiring(ctx, c, pathlock.Request{Namespace: ns, Owner: "go", Op: "upload", Paths: []string{"/i/x"}, Wait: time.Minute})
	waitInLine(t, c, ns, 1)
	if got := cpp.do(t, "release "+g.ID+" "+g.Token); got != `{"released":true}` {
		t.Fatalf("C++ release: %s", got)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("Go waiter: %v", r.err)
	}
	if r.lock.Fence() <= g.Fence {
		t.Fatalf("fence went back: %d after %d", r.lock.Fence(), g.Fence)
	}

	// Go holds; C++ is refused, then waits, and the Go release wakes it.
	refusal := cpp.do(t, "acquire cpp delete_folder /i")
	if !strings.Contains(refusal, `"granted":false`) || !strings.Contains(refusal, r.lock.ID()) {
		t.Fatalf("C++ not refused by the Go lock: %s", refusal)
	}
	cpp.send(t, "acquire cpp delete_folder /i wait=60000")
	waitInLine(t, c, ns, 1)
	if err := r.lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cpp.read(t); !strings.Contains(got, `"granted":true`) {
		t.Fatalf("C++ waiter: %s", got)
	}
}
