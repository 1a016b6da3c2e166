package webdav_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startRedis(dir string, port int) (func(), error) {
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for i := 0; ; i++ {
		c, err := redis.Dial("tcp", addr)
		if err == nil {
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				return stop, nil
			}
		}
		if i > 200 {
			stop()
			return nil, fmt.Errorf("redis-server on %s did not answer: %v", addr, err)
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
	port := freePort()
	stop, err := startRedis(dir, port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisURL = "redis://127.0.0.1:" + strconv.Itoa(port)
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
