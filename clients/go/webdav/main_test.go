package webdav_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"pathlock.dev/pathlock"
	plwebdav "pathlock.dev/pathlock/webdav"
)

// The suite runs against a real redis-server on a free loopback port from
// the one test launcher. It needs PATHLOCK_WEBDAV_LIBRARY, the Functions library of
// matrix/webdav.json (build/pathlock_matrix/pathlock_webdav/redis/pathlock_library.lua);
// REDIS_SERVER (default redis-server from PATH, the launcher's) and LITMUS (default litmus)
// are optional.
var (
	redisURL string
	library  string
	program  string // pathlock-webdav, built for the suite
)

// startRedis: a redis-server from the one test launcher
// (tests/support/pathlock-testenv, tests/README.md; $PATHLOCK_TESTENV
// overrides its path), which picks a free loopback port, tries another when
// it was taken, waits until the server answers and prints one JSON line.
// Returns its URL and what stops it (closing the launcher's stdin: it stops
// the server and removes its directory). Its error is on stderr.
func startRedis() (string, func(), error) {
	launcher := os.Getenv("PATHLOCK_TESTENV")
	if launcher == "" {
		launcher = filepath.Join("..", "..", "..", "tests", "support", "pathlock-testenv")
	}
	cmd := exec.Command(launcher, "redis")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { stdin.Close(); _ = cmd.Wait() }
	var env struct {
		URL string `json:"url"`
	}
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &env)
	}
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("pathlock-testenv redis did not start its server (see stderr): %v", err)
	}
	return env.URL, stop, nil
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
	url, stop, err := startRedis()
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
