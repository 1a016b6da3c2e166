package pathlock_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"pathlock.dev/pathlock"
)

// The deployments of docs/go.md, each real and started here on loopback
// ports: a Cluster of three masters, a master named by a sentinel, and a
// server that the client reaches only over TLS. On each, the same scenario
// (deploymentScenario): acquire and refuse, a waiter woken by a release
// through the wake-up channel, and a cancelled waiter that leaves nobody in
// line.

// observer: a plain connection to the node that serves a namespace, for
// looking at the server's side of a wait.
type observer func(t *testing.T) redis.Conn

// shardSubscribers: PUBSUB SHARDNUMSUB of the namespace's wake-up channel
// on one node.
func shardSubscribers(t *testing.T, conn redis.Conn, ns string) int {
	t.Helper()
	r, err := redis.Values(conn.Do("PUBSUB", "SHARDNUMSUB", "pl:{"+ns+"}:wake"))
	if err != nil || len(r) != 2 {
		t.Fatalf("PUBSUB SHARDNUMSUB: %v %v", r, err)
	}
	n, _ := redis.Int(r[1], nil)
	return n
}

// scene: one namespace on one deployment, its serving node observed.
type scene struct {
	t      *testing.T
	c      *pathlock.Client
	ns     string
	node   redis.Conn
	others []observer
}

// deploymentScenario runs on a client whose re-checks are off (SetRecheck
// beyond the wait), so a waiter is granted only by a wake-up message;
// owner observes the node serving ns, others the remaining masters.
func deploymentScenario(t *testing.T, c *pathlock.Client, ns string, owner observer, others ...observer) {
	t.Helper()
	pathlock.SetRecheck(c, time.Hour)
	s := &scene{t: t, c: c, ns: ns, node: owner(t), others: others}
	defer s.node.Close()
	holder := s.take()
	if _, err := c.Acquire(context.Background(), pathlock.Request{Namespace: ns, Owner: "b", Op: "upload", Paths: []string{"/c/x"}}); !errors.Is(err, pathlock.ErrRefused) {
		t.Fatalf("%s: want ErrRefused, got %v", ns, err)
	}
	s.woken(holder)
	s.cancelled()
}

func (s *scene) take() *pathlock.Lock {
	s.t.Helper()
	l, err := s.c.Acquire(context.Background(), pathlock.Request{Namespace: s.ns, Owner: "a", Op: "delete_folder", Paths: []string{"/c"}, TTL: time.Hour})
	if err != nil {
		s.t.Fatalf("%s: acquire: %v", s.ns, err)
	}
	return l
}

// wait starts a waiter and returns once it is in line and subscribed on the
// namespace's node, and on no other master.
func (s *scene) wait(ctx context.Context) chan result {
	s.t.Helper()
	done := acquiring(ctx, s.c, pathlock.Request{Namespace: s.ns, Owner: "b", Op: "upload", Paths: []string{"/c/x"}, Wait: 10 * time.Minute})
	waitInLine(s.t, s.c, s.ns, 1)
	eventually(s.t, "the waiter subscribed on the namespace's master", func() bool { return shardSubscribers(s.t, s.node, s.ns) == 1 })
	for _, o := range s.others {
		other := o(s.t)
		if n := shardSubscribers(s.t, other, s.ns); n != 0 {
			s.t.Fatalf("%s: %d subscriptions on a master that does not serve it", s.ns, n)
		}
		other.Close()
	}
	return done
}

// woken: the lease lasts an hour and re-checks are off, so only the
// release's message can let the waiter in before its ten minutes.
func (s *scene) woken(holder *pathlock.Lock) {
	s.t.Helper()
	ctx := context.Background()
	done := s.wait(ctx)
	if err := holder.Release(ctx); err != nil {
		s.t.Fatal(err)
	}
	var r result
	eventually(s.t, "the waiter granted by the wake-up", func() bool {
		select {
		case r = <-done:
			return true
		default:
			return false
		}
	})
	if r.err != nil {
		s.t.Fatalf("%s: waiter: %v", s.ns, r.err)
	}
	if err := r.lock.Release(ctx); err != nil {
		s.t.Fatal(err)
	}
}

// cancelled: out of the line, unsubscribed, nothing held but the holder.
func (s *scene) cancelled() {
	s.t.Helper()
	ctx := context.Background()
	holder := s.take()
	wctx, cancel := context.WithCancel(ctx)
	done := s.wait(wctx)
	cancel()
	if r := <-done; !errors.Is(r.err, context.Canceled) || r.lock != nil {
		s.t.Fatalf("%s: cancelled waiter: %v %v", s.ns, r.lock, r.err)
	}
	if ws, err := s.c.Waiters(ctx, s.ns, "/", 10); err != nil || len(ws) != 0 {
		s.t.Fatalf("%s: line after cancel: %v %v", s.ns, ws, err)
	}
	eventually(s.t, "the cancelled waiter's subscription closed", func() bool { return shardSubscribers(s.t, s.node, s.ns) == 0 })
	page, err := s.c.List(ctx, s.ns, "/", 10, "")
	if err != nil || len(page.Locks) != 1 || page.Locks[0].ID != holder.ID() {
		s.t.Fatalf("%s: locks after cancel: %+v %v", s.ns, page, err)
	}
	if err := holder.Release(ctx); err != nil {
		s.t.Fatal(err)
	}
}

func dialObserver(addr string) observer {
	return func(t *testing.T) redis.Conn {
		t.Helper()
		c, err := redis.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// startCluster: three masters from the launcher, up once every node says
// cluster_state:ok; each port leaves room for its bus port (port + 10000).
func startCluster(t *testing.T) []string {
	env := serveTestenv(t, "cluster", []string{"--masters", "3"})
	var addrs []string
	for _, p := range env.Ports {
		if p > clusterPortMax {
			t.Fatalf("a cluster node on %d: its bus port %d is not a port", p, p+10000)
		}
		addrs = append(addrs, loopback(p))
	}
	return addrs
}

func TestCluster(t *testing.T) {
	addrs := startCluster(t)
	c := connect(t, pathlock.Options{URL: "redis://" + strings.Join(addrs, ",")})
	masters := map[string]bool{}
	var spread []string // a namespace on each master
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
		spread = append(spread, ns)
		var others []observer
		for _, a := range addrs {
			if a != owner {
				others = append(others, dialObserver(a))
			}
		}
		deploymentScenario(t, c, ns, dialObserver(owner), others...)
	}
	if len(masters) != 3 {
		t.Fatalf("namespaces reached %d masters", len(masters))
	}
	clusterDefaultLimits(t, c, addrs, spread)
}

// The default limits' key lives on the master of its own slot: written and
// read there (routed by the key), and enforced in every namespace.
func clusterDefaultLimits(t *testing.T, c *pathlock.Client, addrs, spread []string) {
	ctx := context.Background()
	if err := c.SetDefaultLimits(ctx, pathlock.Limits{Locks: pathlock.Limit(0)}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.SetDefaultLimits(ctx, pathlock.Limits{}); err != nil {
			t.Error(err)
		}
	}()
	conn, _ := redis.Dial("tcp", addrs[0])
	slot, _ := redis.Int(conn.Do("CLUSTER", "KEYSLOT", pathlock.DefaultLimitsKey))
	conn.Close()
	node, err := redis.Dial("tcp", ownerOf(t, addrs[0], slot))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if v, err := redis.String(node.Do("GET", pathlock.DefaultLimitsKey)); v != "0 - -" {
		t.Fatalf("GET %s on the master of its slot: %q %v", pathlock.DefaultLimitsKey, v, err)
	}
	fresh := connect(t, pathlock.Options{URL: "redis://" + strings.Join(addrs, ",")}) // reads it anew
	for _, ns := range spread {
		_, err := fresh.Acquire(ctx, pathlock.Request{Namespace: ns, Owner: "d", Op: "upload", Paths: []string{"/d"}})
		var over *pathlock.OverLimitError
		if !errors.As(err, &over) || over.Limit != pathlock.LimitLocks || over.Max != 0 {
			t.Fatalf("%s: want over the limit on locks (0), got %v", ns, err)
		}
	}
}

// ownerOf: the address of the master serving a slot, from CLUSTER SLOTS.
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
			host, _ := redis.String(node[0], nil)
			port, _ := redis.Int(node[1], nil)
			return host + ":" + strconv.Itoa(port)
		}
	}
	t.Fatalf("no master serves slot %d", slot)
	return ""
}

// A master and one sentinel that monitors it: the client is given only the
// sentinel's address and the master's name.
func TestSentinel(t *testing.T) {
	// The launcher's: up once the sentinel names the master.
	env := serveTestenv(t, "sentinel", []string{"--replicas", "0", "--sentinels", "1", "--master-name", "gomaster"})
	master, sentinel := env.MasterPort, env.Ports[0]
	c := connect(t, pathlock.Options{URL: fmt.Sprintf("redis-sentinel://127.0.0.1:%d#gomaster", sentinel)})
	deploymentScenario(t, c, newNS(t), dialObserver(loopback(master)))
	// A name the sentinel does not monitor is a backend error.
	wantBackendError(t, "unknown master name", pathlock.Options{URL: fmt.Sprintf("redis-sentinel://127.0.0.1:%d#nobody", sentinel)})
}

// A server with a TLS port that asks for client certificates (made here by
// tools/dev/redis_devtools/make_test_certs.sh); the client is given only the TLS
// port, the observer uses the plain one.
func TestTLS(t *testing.T) {
	certs := t.TempDir()
	if out, err := exec.Command("sh", repoFile("tools", "dev", "redis_devtools", "make_test_certs.sh"), certs).CombinedOutput(); err != nil {
		t.Fatalf("make_test_certs.sh: %v\n%s", err, out)
	}
	env := serveTestenv(t, "redis", []string{"--tls-dir", certs})
	plain, tlsPort := env.Port, env.Servers[0].TLSPort
	tlsConfig := func(cert string) *tls.Config {
		roots := x509.NewCertPool()
		pem, err := os.ReadFile(filepath.Join(certs, "ca.crt"))
		if err != nil || !roots.AppendCertsFromPEM(pem) {
			t.Fatalf("ca.crt: %v", err)
		}
		pair, err := tls.LoadX509KeyPair(filepath.Join(certs, cert+".crt"), filepath.Join(certs, cert+".key"))
		if err != nil {
			t.Fatal(err)
		}
		return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	url := fmt.Sprintf("rediss://127.0.0.1:%d", tlsPort)
	c := connect(t, pathlock.Options{URL: url, TLSConfig: tlsConfig("client")})
	deploymentScenario(t, c, newNS(t), dialObserver(loopback(plain)))
	// A server certificate of another name is refused: a backend error.
	other := tlsConfig("client")
	other.ServerName = "other.example"
	wantBackendError(t, "wrong server name", pathlock.Options{URL: url, TLSConfig: other})
}

// wantBackendError: a client with opts and the test library fails to open
// or to load it, with ErrBackend.
func wantBackendError(t *testing.T, what string, opts pathlock.Options) {
	t.Helper()
	ctx := context.Background()
	opts.LibraryFile = library
	bad, err := pathlock.New(ctx, opts)
	if err == nil {
		err = bad.LoadLibrary(ctx)
		bad.Close()
	}
	if !errors.Is(err, pathlock.ErrBackend) {
		t.Fatalf("%s: want ErrBackend, got %v", what, err)
	}
}
