package pathlock

// Wake-up subscriptions: one connection per server (per Cluster node) and
// client, shared by all its waiting Acquires (issue 41).
//
// The connection is dialled by the first wait that needs it and kept until
// the Client closes. A namespace's channel (pl:{NS}:wake) is subscribed
// (SSUBSCRIBE) while at least one wait of the client listens to it and
// unsubscribed after the last one left. Replies to SSUBSCRIBE and
// SUNSUBSCRIBE arrive in the order the commands were sent, so a queue
// matches each to its command. A wait whose subscription failed (the
// connection broke, an ACL without channel rights, a slot that moved) keeps
// a subscription that never signals: its timed re-checks (recheck_ms) keep it
// correct. When a connection breaks, its waits are woken, look again and
// subscribe anew on a connection dialled again.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// subscribeTimeout bounds the wait for SSUBSCRIBE's confirmation.
const subscribeTimeout = 5 * time.Second

// subscription: one wait's share of a wake-up channel. wake gets a signal
// for each message that may let the request in.
type subscription struct {
	wc    *wakeConn
	ch    *wakeChannel
	paths []string
	wake  chan struct{}
}

// wakeHub: the client's wake-up connections, by server address.
type wakeHub struct {
	mu    sync.Mutex
	conns map[string]*wakeConn
}

// wakeConn: one subscribed connection and its channels.
type wakeConn struct {
	hub      *wakeHub
	addr     string
	conn     redis.Conn
	mu       sync.Mutex // guards what follows and writes to conn
	channels map[string]*wakeChannel
	replies  []*wakeChannel // a channel per SSUBSCRIBE sent, nil per SUNSUBSCRIBE
	dead     bool
}

// wakeChannel: one subscribed channel and its listeners.
type wakeChannel struct {
	name  string
	subs  map[*subscription]bool
	ready chan struct{} // closed when SSUBSCRIBE was answered
	err   error         // its error, set before ready closes
}

// subscribe attaches a wait for paths of ns to the client's wake-up
// connection to the namespace's server and returns once channel (the
// contract's key "wake" of ns) is subscribed (or failed, or channel is "":
// then the subscription never signals).
func (c *Client) subscribe(ctx context.Context, ns, channel string, paths []string) *subscription {
	s := &subscription{paths: paths, wake: make(chan struct{}, 1)}
	if channel == "" {
		return s
	}
	addr, err := c.be.wakeAddr(ctx, ns)
	if err != nil {
		return s
	}
	wc, err := c.wake.get(ctx, addr, c.be)
	if err != nil {
		return s
	}
	ch, err := wc.attach(s, channel)
	if err != nil {
		return s
	}
	t := time.NewTimer(subscribeTimeout)
	defer t.Stop()
	select {
	case <-ch.ready:
		if ch.err == nil {
			return s
		}
	case <-ctx.Done():
	case <-t.C:
	}
	s.close()
	return &subscription{paths: paths, wake: s.wake}
}

// get: the hub's connection to addr, dialled when there is none (or it broke).
func (h *wakeHub) get(ctx context.Context, addr string, be backend) (*wakeConn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if wc := h.conns[addr]; wc != nil {
		return wc, nil
	}
	conn, err := be.dialAddr(ctx, addr)
	if err != nil {
		return nil, err
	}
	if h.conns == nil {
		h.conns = map[string]*wakeConn{}
	}
	wc := &wakeConn{hub: h, addr: addr, conn: conn, channels: map[string]*wakeChannel{}}
	h.conns[addr] = wc
	go wc.read()
	return wc, nil
}

// closeAll closes every connection (Client.Close).
func (h *wakeHub) closeAll() {
	h.mu.Lock()
	conns := h.conns
	h.conns = nil
	h.mu.Unlock()
	for _, wc := range conns {
		wc.conn.Close() // the reader sees the error and fails what waits
	}
}

// connections: how many wake-up connections are open (for tests).
func (h *wakeHub) connections() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// attach adds s to the channel, subscribing it when s is its first listener.
func (wc *wakeConn) attach(s *subscription, name string) (*wakeChannel, error) {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if wc.dead {
		return nil, errors.New("wake-up connection closed")
	}
	ch := wc.channels[name]
	if ch == nil {
		ch = &wakeChannel{name: name, subs: map[*subscription]bool{}, ready: make(chan struct{})}
		if err := wc.send("SSUBSCRIBE", name); err != nil {
			return nil, err
		}
		wc.channels[name] = ch
		wc.replies = append(wc.replies, ch)
	}
	ch.subs[s] = true
	s.wc, s.ch = wc, ch
	return ch, nil
}

func (wc *wakeConn) send(cmd, channel string) error {
	if err := wc.conn.Send(cmd, channel); err != nil {
		return err
	}
	return wc.conn.Flush()
}

// close detaches the wait; the channel is unsubscribed after its last one.
func (s *subscription) close() {
	if s.wc == nil {
		return
	}
	wc := s.wc
	wc.mu.Lock()
	defer wc.mu.Unlock()
	delete(s.ch.subs, s)
	if len(s.ch.subs) > 0 || wc.channels[s.ch.name] != s.ch {
		return
	}
	delete(wc.channels, s.ch.name)
	select {
	case <-s.ch.ready:
		if s.ch.err != nil || wc.dead {
			return
		}
	default: // its SSUBSCRIBE is not answered yet: the reply finds no channel
	}
	if wc.send("SUNSUBSCRIBE", s.ch.name) == nil {
		wc.replies = append(wc.replies, nil)
	}
}

// read dispatches what the connection receives until it breaks.
func (wc *wakeConn) read() {
	for {
		v, err := redis.ReceiveWithTimeout(wc.conn, 0)
		var re redis.Error
		switch {
		case errors.As(err, &re): // SSUBSCRIBE refused (NOPERM, MOVED)
			wc.answered(err)
		case err != nil:
			wc.broke(err)
			return
		default:
			wc.dispatch(v)
		}
	}
}

func (wc *wakeConn) dispatch(v interface{}) {
	r, ok := v.([]interface{})
	if !ok || len(r) != 3 {
		return
	}
	switch strings.ToLower(str(r[0])) {
	case "ssubscribe", "sunsubscribe":
		wc.answered(nil)
	case "smessage", "message":
		wc.mu.Lock()
		defer wc.mu.Unlock()
		ch := wc.channels[str(r[1])]
		if ch == nil {
			return
		}
		for s := range ch.subs {
			if relevant(str(r[2]), s.paths) {
				select {
				case s.wake <- struct{}{}:
				default:
				}
			}
		}
	}
}

// answered: the reply to the oldest SSUBSCRIBE or SUNSUBSCRIBE sent.
func (wc *wakeConn) answered(err error) {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	if len(wc.replies) == 0 {
		return
	}
	ch := wc.replies[0]
	wc.replies = wc.replies[1:]
	if ch == nil {
		return
	}
	ch.err = err
	close(ch.ready)
	switch {
	case err != nil && wc.channels[ch.name] == ch:
		delete(wc.channels, ch.name)
	case err == nil && wc.channels[ch.name] != ch: // its waits left before the answer
		if wc.send("SUNSUBSCRIBE", ch.name) == nil {
			wc.replies = append(wc.replies, nil)
		}
	}
}

// broke: the connection failed or was closed; its waits go on polling.
func (wc *wakeConn) broke(err error) {
	wc.hub.mu.Lock()
	if wc.hub.conns[wc.addr] == wc {
		delete(wc.hub.conns, wc.addr)
	}
	wc.hub.mu.Unlock()
	wc.mu.Lock()
	defer wc.mu.Unlock()
	wc.dead = true
	wc.conn.Close()
	for _, ch := range wc.replies {
		if ch != nil {
			ch.err = err
			close(ch.ready)
		}
	}
	wc.replies = nil
	for _, ch := range wc.channels {
		for sub := range ch.subs { // look again now, and subscribe anew
			select {
			case sub.wake <- struct{}{}:
			default:
			}
		}
	}
	wc.channels = map[string]*wakeChannel{}
}

// broken: the subscription's connection broke after it was subscribed (a
// subscription that never got one is not retried).
func (s *subscription) broken() bool {
	if s.wc == nil {
		return false
	}
	s.wc.mu.Lock()
	defer s.wc.mu.Unlock()
	return s.wc.dead
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
