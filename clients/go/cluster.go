package pathlock

// Redis Cluster (backend.go): a namespace's calls go to the master of
// its hash tag's slot, through redisc; wake-ups and clocks by that slot.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
)

// slotKey: a key in the slot of namespace ns: every key of a namespace
// carries its hash tag {NS} (the contract's keys.pattern, which
// parseContract checks), so this one has their slot.
func slotKey(ns string) string { return "{" + ns + "}" }

// cluster: Redis Cluster through redisc; every key of a namespace is in the
// slot of its hash tag {NS}.
type cluster struct {
	opts  []redis.DialOption
	c     *redisc.Cluster
	mu    sync.Mutex
	slots []slotRange // for wakeAddr
}

func (c *cluster) conn(ctx context.Context, ns string) (redis.Conn, error) {
	return c.keyConn(ctx, slotKey(ns))
}

func (c *cluster) keyConn(ctx context.Context, key string) (redis.Conn, error) {
	conn := c.c.Get()
	if err := redisc.BindConn(conn, key); err != nil {
		conn.Close()
		return nil, err
	}
	// MOVED, ASK and TRYAGAIN are answered before the call runs, so
	// following them is safe.
	rc, err := redisc.RetryConn(conn, 5, 100*time.Millisecond)
	if err != nil {
		return nil, err
	}
	return timedConn{rc}, nil
}

// timedConn: redisc's retrying connection has no DoWithTimeout; its reads
// are bounded by Options.ReadTimeout, and exchange (call.go) returns at the
// context's end whatever the read does.
type timedConn struct{ redis.Conn }

func (t timedConn) DoWithTimeout(_ time.Duration, cmd string, args ...interface{}) (interface{}, error) {
	return t.Conn.Do(cmd, args...)
}

func (t timedConn) ReceiveWithTimeout(_ time.Duration) (interface{}, error) { return t.Conn.Receive() }

func (c *cluster) clockKey(ns string) string {
	return strconv.Itoa(redisc.Slot(slotKey(ns)))
}

// wakeAddr: the master of the namespace's slot, from CLUSTER SLOTS (read
// again when the slot is not in the table).
func (c *cluster) wakeAddr(ctx context.Context, ns string) (string, error) {
	slot := redisc.Slot(slotKey(ns))
	c.mu.Lock()
	defer c.mu.Unlock()
	for refreshed := false; ; refreshed = true {
		for _, r := range c.slots {
			if r.lo <= slot && slot <= r.hi {
				return r.addr, nil
			}
		}
		if refreshed {
			return "", fmt.Errorf("no master serves slot %d", slot)
		}
		table, err := c.slotTable()
		if err != nil {
			return "", err
		}
		c.slots = table
	}
}

type slotRange struct {
	lo, hi int
	addr   string
}

// slotTable reads CLUSTER SLOTS: each range and its master.
func (c *cluster) slotTable() ([]slotRange, error) {
	conn := c.c.Get()
	defer conn.Close()
	slots, err := redis.Values(conn.Do("CLUSTER", "SLOTS"))
	if err != nil {
		return nil, err
	}
	var out []slotRange
	for _, s := range slots {
		r, _ := s.([]interface{})
		if len(r) < 3 {
			continue
		}
		node, _ := r[2].([]interface{})
		if len(node) < 2 {
			continue
		}
		lo, _ := redis.Int(r[0], nil)
		hi, _ := redis.Int(r[1], nil)
		host, _ := redis.String(node[0], nil)
		port, _ := redis.Int(node[1], nil)
		out = append(out, slotRange{lo: lo, hi: hi, addr: net.JoinHostPort(host, strconv.Itoa(port))})
	}
	return out, nil
}

func (c *cluster) masters(ctx context.Context) ([]string, error) {
	table, err := c.slotTable()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range table {
		if !seen[r.addr] {
			seen[r.addr] = true
			out = append(out, r.addr)
		}
	}
	return out, nil
}

func (c *cluster) dialAddr(ctx context.Context, addr string) (redis.Conn, error) {
	return redis.DialContext(ctx, "tcp", addr, c.opts...)
}

func (c *cluster) broken() {
	_ = c.c.Refresh()
	c.mu.Lock()
	c.slots = nil
	c.mu.Unlock()
}
func (c *cluster) close() error { return c.c.Close() }
