package pathlock

// Redis Sentinel (backend.go): the master the sentinels name, asked again
// after a failover.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/gomodule/redigo/redis"
)

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
