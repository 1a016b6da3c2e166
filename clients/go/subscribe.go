package pathlock

import (
	"context"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// subscription: a dedicated connection subscribed (SSUBSCRIBE) to the
// namespace's wake-up channel. wake gets a signal for each message that may
// let the request in. A subscription that failed is a valid one that never
// signals: the timed re-checks keep waiting correct.
type subscription struct {
	conn redis.Conn
	wake chan struct{}
}

func (c *Client) subscribe(ctx context.Context, ns string, paths []string) *subscription {
	s := &subscription{wake: make(chan struct{}, 1)}
	conn, err := c.be.dedicated(ctx, ns)
	if err != nil {
		return s
	}
	channel := keyPrefix(ns) + "wake"
	if err := conn.Send("SSUBSCRIBE", channel); err != nil {
		conn.Close()
		return s
	}
	if err := conn.Flush(); err != nil {
		conn.Close()
		return s
	}
	// The confirmation: ["ssubscribe", channel, count], or an error (a user
	// without channel rights, a renamed command).
	v, err := redis.ReceiveWithTimeout(conn, 5*time.Second)
	if r, ok := v.([]interface{}); err != nil || !ok || len(r) < 1 || strings.ToLower(str(r[0])) != "ssubscribe" {
		conn.Close()
		return s
	}
	s.conn = conn
	go s.read(paths)
	return s
}

func (s *subscription) read(paths []string) {
	for {
		v, err := redis.ReceiveWithTimeout(s.conn, 0)
		if err != nil {
			return // closed
		}
		r, ok := v.([]interface{})
		if !ok || len(r) != 3 {
			continue
		}
		if kind := str(r[0]); kind != "smessage" && kind != "message" {
			continue
		}
		if relevant(str(r[2]), paths) {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
}

func (s *subscription) close() {
	if s.conn != nil {
		s.conn.Close()
	}
}

// relevant: can a removal of these paths (joined by \n) let a request for
// paths in? An empty payload: look again.
func relevant(payload string, paths []string) bool {
	if payload == "" {
		return true
	}
	for _, removed := range strings.Split(payload, "\n") {
		for _, p := range paths {
			if overlaps(removed, p) {
				return true
			}
		}
	}
	return false
}

func overlaps(a, b string) bool {
	return a == b || inside(a, b) || inside(b, a)
}

// inside: b lies strictly inside a.
func inside(a, b string) bool {
	if a == "/" {
		return b != "/"
	}
	return len(b) > len(a) && b[len(a)] == '/' && b[:len(a)] == a
}
