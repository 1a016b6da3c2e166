package pathlock

// Where a namespace's calls go: the backend of the deployment's topology,
// chosen from the URL (url.go) and the server: one server here, a Cluster
// (cluster.go) or sentinels (sentinel.go).

import (
	"context"
	"strings"
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
