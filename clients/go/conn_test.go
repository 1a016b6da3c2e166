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

// clientList: the server's CLIENT LIST, one map of fields per connection.
func clientList(t *testing.T, obs redis.Conn) []map[string]string {
	t.Helper()
	text, err := redis.String(obs.Do("CLIENT", "LIST"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		out = append(out, fields)
	}
	return out
}

// One wake-up subscription connection serves all the waits of a client: 40
// waits in 5 namespaces share it, and are all woken through it (the timed
// re-check is an hour).
func TestWaitersShareOneSubscription(t *testing.T) {
	c, obs, _ := stalledServer(t, pathlock.Options{})
	pathlock.SetRecheck(c, time.Hour)
	bg := context.Background()
	var holders []*pathlock.Lock
	var nss []string
	for i := 0; i < 5; i++ {
		ns := newNS(t)
		nss = append(nss, ns)
		holders = append(holders, acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "delete_folder", Paths: []string{"/f"}, TTL: time.Minute}))
	}
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	var dones []chan result
	for i := 0; i < 40; i++ {
		dones = append(dones, acquiring(ctx, c, pathlock.Request{Namespace: nss[i%5], Owner: "b", Op: "upload",
			Paths: []string{fmt.Sprintf("/f/x%d", i)}, Wait: 20 * time.Second}))
	}
	for _, ns := range nss {
		waitInLine(t, c, ns, 8)
	}
	eventually(t, "every namespace's channel subscribed", func() bool {
		n, err := redis.Values(obs.Do("PUBSUB", "SHARDNUMSUB", "pl:{"+nss[4]+"}:wake"))
		return err == nil && len(n) == 2 && n[1].(int64) == 1
	})
	subscribers, all := 0, 0
	for _, cl := range clientList(t, obs) {
		all++
		if cl["ssub"] != "0" && cl["ssub"] != "" || strings.Contains(cl["cmd"], "ssubscribe") {
			subscribers++
		}
	}
	if subscribers != 1 {
		t.Fatalf("%d subscribed connections for 40 waits (CLIENT LIST), want 1", subscribers)
	}
	t.Logf("40 waits: %d connections in all (the observer included), 1 subscribed", all)
	for _, h := range holders {
		if err := h.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range dones {
		if r := <-d; r.err != nil {
			t.Fatalf("wait %d: %v", i, r.err)
		}
	}
	eventually(t, "channels unsubscribed after the last wait", func() bool {
		n, err := redis.Values(obs.Do("PUBSUB", "SHARDNUMSUB", "pl:{"+nss[0]+"}:wake"))
		return err == nil && len(n) == 2 && n[1].(int64) == 0
	})
}

// The pool is bounded: with MaxConns busy on a paused server, a call fails
// at once with ErrPoolExhausted, naming the bound, and sends nothing.
func TestPoolBoundIsAClearError(t *testing.T) {
	c, obs, _ := stalledServer(t, pathlock.Options{MaxConns: 2})
	ns := newNS(t)
	bg := context.Background()
	l := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/p"}})
	resume := pause(t, obs, 2*time.Second)
	ctx, cancel := context.WithTimeout(bg, 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = l.Held(ctx)
		}()
	}
	var err error
	eventually(t, "the pool exhausted", func() bool {
		short, cancel := context.WithTimeout(bg, 50*time.Millisecond)
		defer cancel()
		_, err = l.Held(short)
		return errors.Is(err, pathlock.ErrPoolExhausted)
	})
	if !errors.Is(err, pathlock.ErrBackend) || !strings.Contains(err.Error(), "all 2 connections") ||
		!strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("unclear error: %v", err)
	}
	wg.Wait()
	resume()
	if ok, err := l.Held(bg); err != nil || !ok {
		t.Fatalf("after the pause: %v %v", ok, err)
	}
}

// A wake-up connection killed while a request waits: the wait subscribes
// anew and is still woken by the release (the timed re-check is an hour).
func TestWaitSurvivesAKilledSubscription(t *testing.T) {
	c, obs, _ := stalledServer(t, pathlock.Options{})
	pathlock.SetRecheck(c, time.Hour)
	ns := newNS(t)
	bg := context.Background()
	holder := acquired(t, c, pathlock.Request{Namespace: ns, Owner: "a", Op: "delete_folder", Paths: []string{"/f"}, TTL: time.Minute})
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	done := acquiring(ctx, c, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/f/x"}, Wait: 15 * time.Second})
	subscribed := func() bool {
		n, err := redis.Values(obs.Do("PUBSUB", "SHARDNUMSUB", "pl:{"+ns+"}:wake"))
		return err == nil && len(n) == 2 && n[1].(int64) == 1
	}
	eventually(t, "subscribed", subscribed)
	killed, err := redis.Int(obs.Do("CLIENT", "KILL", "TYPE", "pubsub"))
	if err != nil || killed != 1 {
		t.Fatalf("CLIENT KILL TYPE pubsub: %d %v", killed, err)
	}
	eventually(t, "subscribed anew", subscribed)
	if err := holder.Release(bg); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil {
		t.Fatalf("the wait after its subscription was killed: %v", r.err)
	}
}
