package webdav_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"pathlock.dev/pathlock"
	plwebdav "pathlock.dev/pathlock/webdav"
)

// The suite runs against a real redis-server it starts on a free loopback
// port. It needs PATHLOCK_WEBDAV_LIBRARY, the Functions library of
// matrix/webdav.json (build/pathlock_matrix/pathlock_webdav/redis/pathlock_library.lua);
// REDIS_SERVER (default redis-server from PATH) and LITMUS (default litmus)
// are optional.
var (
	redisURL string
	library  string
	program  string // pathlock-webdav, built for the suite
)

// freePort: a loopback port that was free a moment ago (the OS's choice;
// the server here is no Redis Cluster node, whose bus port is port + 10000:
// clients/go/main_test.go has freeClusterPort for those).
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis starts redis-server in dir on a free port, on another one when
// it does not start (a parallel test took the port meanwhile; five tries),
// and waits until it answers with INFO naming its own process (not another
// test's server on that port). Returns its URL and what stops it.
func startRedis(dir string) (string, func(), error) {
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	var err error
	for try := 0; try < 5; try++ {
		port := strconv.Itoa(freePort())
		addr := "127.0.0.1:" + port
		cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
		if err = cmd.Start(); err != nil {
			return "", nil, err
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() { _ = cmd.Process.Kill(); <-exited }
		if err = answers(addr, cmd.Process.Pid, exited); err == nil {
			return "redis://" + addr, stop, nil
		}
		stop()
	}
	return "", nil, err
}

// answers waits until the redis-server of process pid answers on addr, or
// it exits.
func answers(addr string, pid int, exited chan struct{}) error {
	self := fmt.Sprintf("process_id:%d\r\n", pid)
	for i := 0; ; i++ {
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited before it answered", addr)
		default:
		}
		// Time limits: what holds the port may be no redis-server at all.
		c, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second),
			redis.DialReadTimeout(time.Second), redis.DialWriteTimeout(time.Second))
		if err == nil {
			var info string
			info, err = redis.String(c.Do("INFO", "server"))
			c.Close()
			if err == nil && strings.Contains(info, self) {
				return nil
			}
		}
		if i > 200 {
			return fmt.Errorf("redis-server on %s did not answer: %v", addr, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func TestMain(m *testing.M) {
	library = os.Getenv("PATHLOCK_WEBDAV_LIBRARY")
	if _, err := os.Stat(library); library == "" || err != nil {
		fmt.Fprintln(os.Stderr, "pathlock webdav tests: set PATHLOCK_WEBDAV_LIBRARY, e.g. build/pathlock_matrix/pathlock_webdav/redis/pathlock_library.lua")
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "pathlock-webdav-test")
	if err != nil {
		panic(err)
	}
	program = filepath.Join(dir, "pathlock-webdav")
	if out, err := exec.Command("go", "build", "-o", program, "./cmd/pathlock-webdav").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/pathlock-webdav: %v\n%s", err, out)
		os.Exit(1)
	}
	url, stop, err := startRedis(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisURL = url
	code := m.Run()
	stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

var nsCounter int

// newLS: a LockSystem on a client of its own, in namespace ns.
func newLS(t *testing.T, ns string, o plwebdav.Options) *plwebdav.LockSystem {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pathlock.New(ctx, pathlock.Options{URL: redisURL, LibraryFile: library})
	if err != nil {
		t.Fatal(err)
	}
	o.Namespace = ns
	ls, err := plwebdav.New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ls.Close(); c.Close() })
	return ls
}

func newNS() string {
	nsCounter++
	return fmt.Sprintf("webdav-test-%d-%d", os.Getpid(), nsCounter)
}

// eventually polls cond every 20 ms for up to limit.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
