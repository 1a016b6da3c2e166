package pathlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
)

// Topology is the kind of Redis deployment a Client talks to.
type Topology int

// The deployments a Client supports.
const (
	// Auto: Cluster when several addresses are given or the server says
	// cluster_enabled:1, else Standalone (or Sentinel for a sentinel URL).
	Auto Topology = iota
	Standalone
	Cluster
	Sentinel
)

// backend routes the calls of a namespace to the master that serves it.
type backend interface {
	// conn: a connection for the namespace's calls; the caller closes it.
	conn(ctx context.Context, ns string) (redis.Conn, error)
	// keyConn: a connection to the server of key's slot (the default
	// limits' key, limits.go); the caller closes it.
	keyConn(ctx context.Context, key string) (redis.Conn, error)
	// wakeAddr: the address of the namespace's master, for the wake-up
	// subscription (subscribe.go).
	wakeAddr(ctx context.Context, ns string) (string, error)
	// masters: the address of every master.
	masters(ctx context.Context) ([]string, error)
	// dialAddr: a new connection to one address.
	dialAddr(ctx context.Context, addr string) (redis.Conn, error)
	// clockKey: which server's clock a call of the namespace meets ("" for
	// one server, the slot in a Cluster).
	clockKey(ns string) string
	// broken: a reply that says the connection reached the wrong server
	// (READONLY); the backend looks again.
	broken()
	close() error
}

// endpoint is a parsed Redis URL.
type endpoint struct {
	addrs    []string
	sentinel string // master name, for redis[s]-sentinel://
	tls      bool
	user     string
	password string
	db       int
}

// parseURL reads redis[s]://[user:password@]host:port[,host:port...][/db]
// and redis[s]-sentinel://[user:password@]host:port[,host:port...][/db]#MASTER.
func parseURL(raw string) (endpoint, error) {
	var ep endpoint
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ep, invalidf("redis url %q: expected redis[s]://host:port or redis[s]-sentinel://host:port#MASTER", raw)
	}
	if err := ep.setScheme(raw, scheme); err != nil {
		return ep, err
	}
	if strings.Contains(rest, "?") {
		return ep, invalidf("redis url %q: query strings are not supported", raw)
	}
	rest, err := ep.takeMaster(raw, rest)
	if err == nil {
		rest, err = ep.takeCredentials(raw, rest)
	}
	if err == nil {
		err = ep.takeHostsAndDB(raw, rest)
	}
	return ep, err
}

func (ep *endpoint) setScheme(raw, scheme string) error {
	switch scheme {
	case "redis":
	case "rediss":
		ep.tls = true
	case "redis-sentinel":
		ep.sentinel = "?"
	case "rediss-sentinel":
		ep.sentinel, ep.tls = "?", true
	default:
		return invalidf("redis url %q: the scheme must be redis, rediss, redis-sentinel or rediss-sentinel", raw)
	}
	return nil
}

// takeMaster reads a sentinel url's #MASTER; returns the rest before it.
func (ep *endpoint) takeMaster(raw, rest string) (string, error) {
	i := strings.IndexByte(rest, '#')
	switch {
	case i >= 0 && ep.sentinel == "":
		return rest, invalidf("redis url %q: a #fragment is only for a sentinel url (the master name)", raw)
	case i >= 0:
		ep.sentinel, rest = rest[i+1:], rest[:i]
		if ep.sentinel == "" {
			return rest, invalidf("redis url %q: a sentinel url needs the master name after '#'", raw)
		}
	case ep.sentinel != "":
		return rest, invalidf("redis url %q: a sentinel url needs the master name after '#'", raw)
	}
	return rest, nil
}

// takeCredentials reads [user:password@] (a lone name is the password).
func (ep *endpoint) takeCredentials(raw, rest string) (string, error) {
	i := strings.LastIndexByte(rest, '@')
	if i < 0 {
		return rest, nil
	}
	u, p, hasPass := strings.Cut(rest[:i], ":")
	var err error
	if ep.user, err = url.PathUnescape(u); err != nil {
		return rest, invalidf("redis url %q: bad user", raw)
	}
	if !hasPass {
		ep.password, ep.user = ep.user, ""
	} else if ep.password, err = url.PathUnescape(p); err != nil {
		return rest, invalidf("redis url %q: bad password", raw)
	}
	return rest[i+1:], nil
}

// takeHostsAndDB reads host:port[,host:port...][/db]; a host without a port
// gets 6379 (26379 for sentinels).
func (ep *endpoint) takeHostsAndDB(raw, rest string) error {
	hosts, db, hasDB := strings.Cut(rest, "/")
	if hasDB && db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return invalidf("redis url %q: bad database %q", raw, db)
		}
		ep.db = n
	}
	port := "6379"
	if ep.sentinel != "" {
		port = "26379"
	}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return invalidf("redis url %q: empty host", raw)
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), port)
		}
		ep.addrs = append(ep.addrs, h)
	}
	return nil
}

func (ep endpoint) dialOptions(o *Options) []redis.DialOption {
	opts := []redis.DialOption{
		redis.DialConnectTimeout(o.DialTimeout),
		redis.DialReadTimeout(o.ReadTimeout),
		redis.DialWriteTimeout(o.ReadTimeout),
	}
	if ep.password != "" {
		opts = append(opts, redis.DialPassword(ep.password))
	}
	if ep.user != "" {
		opts = append(opts, redis.DialUsername(ep.user))
	}
	if ep.db != 0 {
		opts = append(opts, redis.DialDatabase(ep.db))
	}
	if ep.tls || o.TLSConfig != nil {
		cfg := o.TLSConfig
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(cfg))
	}
	return opts
}

func newPool(o *Options, dial func(ctx context.Context) (redis.Conn, error)) *redis.Pool {
	return &redis.Pool{
		DialContext: dial,
		MaxIdle:     o.PoolSize,
		MaxActive:   o.MaxConns,
		IdleTimeout: 5 * time.Minute,
	}
}

func newBackend(ctx context.Context, ep endpoint, o *Options) (backend, error) {
	opts := ep.dialOptions(o)
	topo := o.Topology
	if ep.sentinel != "" {
		if topo != Auto && topo != Sentinel {
			return nil, invalidf("a sentinel url with another Topology")
		}
		return newSentinel(ep, o, opts), nil
	}
	if topo == Auto {
		topo = Standalone
		if len(ep.addrs) > 1 {
			topo = Cluster
		} else {
			c, err := redis.DialContext(ctx, "tcp", ep.addrs[0], opts...)
			if err != nil {
				return nil, &BackendError{Op: "connect " + ep.addrs[0], Err: err}
			}
			info, err := redis.String(c.Do("INFO", "cluster"))
			c.Close()
			if err != nil {
				return nil, &BackendError{Op: "INFO cluster", Err: err}
			}
			if strings.Contains(info, "cluster_enabled:1") {
				topo = Cluster
			}
		}
	}
	switch topo {
	case Standalone:
		addr := ep.addrs[0]
		s := &single{opts: opts, addr: addr}
		s.pool = newPool(o, func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, opts...)
		})
		return s, nil
	case Cluster:
		c := &cluster{opts: opts}
		c.c = &redisc.Cluster{
			StartupNodes: ep.addrs,
			DialOptions:  opts,
			CreatePool: func(addr string, opts ...redis.DialOption) (*redis.Pool, error) {
				return newPool(o, func(ctx context.Context) (redis.Conn, error) {
					return redis.DialContext(ctx, "tcp", addr, opts...)
				}), nil
			},
		}
		if err := c.c.Refresh(); err != nil {
			return nil, &BackendError{Op: "CLUSTER SLOTS", Err: err}
		}
		return c, nil
	}
	return nil, invalidf("unknown topology %d", topo)
}

// single: one standalone server.
type single struct {
	opts []redis.DialOption
	addr string
	pool *redis.Pool
}

func (s *single) conn(ctx context.Context, ns string) (redis.Conn, error) {
	return s.pool.GetContext(ctx)
}

func (s *single) keyConn(ctx context.Context, key string) (redis.Conn, error) {
	return s.pool.GetContext(ctx)
}

func (s *single) wakeAddr(ctx context.Context, ns string) (string, error) { return s.addr, nil }

func (s *single) masters(ctx context.Context) ([]string, error) { return []string{s.addr}, nil }

func (s *single) dialAddr(ctx context.Context, addr string) (redis.Conn, error) {
	return redis.DialContext(ctx, "tcp", addr, s.opts...)
}

func (s *single) clockKey(ns string) string { return "" }
func (s *single) broken()                   {}
func (s *single) close() error              { return s.pool.Close() }

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

// sentinels: the master a set of sentinels names (SENTINEL
// get-master-addr-by-name), asked again for every new connection after a
// READONLY reply or a failed dial.
type sentinels struct {
	ep   endpoint
	o    *Options
	opts []redis.DialOption // for the master

	mu   sync.Mutex
	addr string
	pool *redis.Pool
}

func newSentinel(ep endpoint, o *Options, opts []redis.DialOption) *sentinels {
	return &sentinels{ep: ep, o: o, opts: opts}
}

func (s *sentinels) lookup(ctx context.Context) (string, error) {
	var errs []string
	// The sentinels themselves take the URL's TLS setting, not its
	// credentials or database.
	sopts := []redis.DialOption{redis.DialConnectTimeout(s.o.DialTimeout), redis.DialReadTimeout(s.o.ReadTimeout)}
	if s.ep.tls || s.o.TLSConfig != nil {
		cfg := s.o.TLSConfig
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		sopts = append(sopts, redis.DialUseTLS(true), redis.DialTLSConfig(cfg))
	}
	for _, a := range s.ep.addrs {
		c, err := redis.DialContext(ctx, "tcp", a, sopts...)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		r, err := redis.Strings(c.Do("SENTINEL", "get-master-addr-by-name", s.ep.sentinel))
		c.Close()
		if err == nil && len(r) == 2 {
			return net.JoinHostPort(r[0], r[1]), nil
		}
		if err == nil || errors.Is(err, redis.ErrNil) {
			err = fmt.Errorf("sentinel %s does not know master %q", a, s.ep.sentinel)
		}
		errs = append(errs, err.Error())
	}
	return "", fmt.Errorf("no sentinel named the master: %s", strings.Join(errs, "; "))
}

func (s *sentinels) current(ctx context.Context) (*redis.Pool, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pool != nil {
		return s.pool, s.addr, nil
	}
	addr, err := s.lookup(ctx)
	if err != nil {
		return nil, "", err
	}
	opts := s.opts
	s.addr = addr
	s.pool = newPool(s.o, func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr, opts...)
	})
	return s.pool, addr, nil
}

func (s *sentinels) conn(ctx context.Context, ns string) (redis.Conn, error) {
	p, _, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	c, err := p.GetContext(ctx)
	if err != nil {
		s.broken()
	}
	return c, err
}

func (s *sentinels) keyConn(ctx context.Context, key string) (redis.Conn, error) {
	return s.conn(ctx, "")
}

func (s *sentinels) wakeAddr(ctx context.Context, ns string) (string, error) {
	_, addr, err := s.current(ctx)
	return addr, err
}

func (s *sentinels) masters(ctx context.Context) ([]string, error) {
	_, addr, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	return []string{addr}, nil
}

func (s *sentinels) dialAddr(ctx context.Context, addr string) (redis.Conn, error) {
	return redis.DialContext(ctx, "tcp", addr, s.opts...)
}

func (s *sentinels) clockKey(ns string) string { return "" }

func (s *sentinels) broken() {
	if p := swapLocked(&s.mu, &s.pool, nil); p != nil {
		p.Close()
	}
}

func (s *sentinels) close() error {
	s.broken()
	return nil
}
