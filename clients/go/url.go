package pathlock

// Redis URLs (Options.URL): redis[s]:// for one server or a Cluster,
// redis[s]-sentinel://...#MASTER for sentinels, and the dial options they give.

import (
	"crypto/tls"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

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
