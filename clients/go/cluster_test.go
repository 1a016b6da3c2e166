package pathlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"pathlock"
)

// A Redis Cluster of three masters on loopback ports: namespaces in
// different slots are served by different masters, and waiting subscribes
// on the namespace's own master.
func TestCluster(t *testing.T) {
	dir := t.TempDir()
	var addrs []string
	for i := 0; i < 3; i++ {
		port := freePort()
		stop, err := startRedis(dir, port, "--cluster-enabled", "yes",
			"--cluster-config-file", fmt.Sprintf("nodes-%d.conf", port), "--cluster-node-timeout", "5000")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	cli := os.Getenv("REDIS_CLI")
	if cli == "" {
		cli = "redis-cli"
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		eventually(t, a+" says cluster_state:ok", func() bool {
			c, err := redis.Dial("tcp", a)
			if err != nil {
				return false
			}
			defer c.Close()
			info, _ := redis.String(c.Do("CLUSTER", "INFO"))
			return strings.Contains(info, "cluster_state:ok")
		})
	}
	ctx := context.Background()
	c, err := pathlock.New(ctx, pathlock.Options{URL: "redis://" + strings.Join(addrs, ","), LibraryFile: library})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.LoadLibrary(ctx); err != nil {
		t.Fatal(err)
	}
	// Namespaces on every master.
	masters := map[string]bool{}
	for i := 0; len(masters) < 3 && i < 100; i++ {
		ns := fmt.Sprintf("cluster-%d", i)
		conn, _ := redis.Dial("tcp", addrs[0])
		slot, _ := redis.Int(conn.Do("CLUSTER", "KEYSLOT", "pl:{"+ns+"}:meta"))
		conn.Close()
		owner := ownerOf(t, addrs[0], slot)
		if masters[owner] {
			continue
		}
		masters[owner] = true
		holder, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "a", Op: "delete_folder", Paths: []string{"/c"}, TTL: time.Minute})
		if err != nil {
			t.Fatalf("%s on %s: %v", ns, owner, err)
		}
		if _, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/c/x"}}); !errors.Is(err, pathlock.ErrRefused) {
			t.Fatalf("%s: want ErrRefused, got %v", ns, err)
		}
		done := make(chan result)
		go func() {
			l, err := c.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/c/x"}, Wait: time.Minute})
			done <- result{l, err}
		}()
		waitInLine(t, c, ns, 1)
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil {
			t.Fatalf("%s: waiter: %v", ns, r.err)
		}
		if err := r.lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(masters) != 3 {
		t.Fatalf("namespaces reached %d masters", len(masters))
	}
}

// ownerOf: the master serving a slot, from CLUSTER SLOTS.
func ownerOf(t *testing.T, addr string, slot int) string {
	c, err := redis.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ranges, err := redis.Values(c.Do("CLUSTER", "SLOTS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ranges {
		f, _ := redis.Values(r, nil)
		lo, _ := redis.Int(f[0], nil)
		hi, _ := redis.Int(f[1], nil)
		if slot >= lo && slot <= hi {
			node, _ := redis.Values(f[2], nil)
			port, _ := redis.Int(node[1], nil)
			return strconv.Itoa(port)
		}
	}
	t.Fatalf("no master serves slot %d", slot)
	return ""
}
