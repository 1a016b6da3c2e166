package pathlock_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"pathlock.dev/pathlock"
)

// The suite runs against a real redis-server on a free loopback port from
// the one test launcher (testenv_test.go). It needs:
//
//	PATHLOCK_LIBRARY  the Functions library file (pathlock_library.lua)
//	PATHLOCK_VECTORS  the folder of paths.json and matrix-cases.json
//	PATHLOCK_CLI      the C++ pathlock program (interop tests)
//	REDIS_SERVER      optional, default redis-server from PATH (the launcher's)
var (
	redisURL  string
	redisAddr string
	library   string
	vectors   string
	cli       string
)

func need(name string) string {
	v := os.Getenv(name)
	if v == "" {
		fmt.Fprintf(os.Stderr, "pathlock Go tests: set %s (see clients/go/main_test.go; e.g. %s)\n", name, map[string]string{
			"PATHLOCK_LIBRARY": "build/pathlock_matrix/pathlock_cloud_drive/redis/pathlock_library.lua",
			"PATHLOCK_VECTORS": "build/test-vectors",
			"PATHLOCK_CLI":     "build/bin/pathlock",
		}[name])
		os.Exit(1)
	}
	if _, err := os.Stat(v); err != nil {
		fmt.Fprintf(os.Stderr, "pathlock Go tests: %s=%s: %v\n", name, v, err)
		os.Exit(1)
	}
	return v
}

// clusterPortMax: the highest port a Redis Cluster node may listen on. Its
// cluster bus listens on port + 10000 (no --cluster-port is given), which
// must be a port too; redis-server refuses to start above it. The launcher
// (testenv_test.go) keeps a Cluster's ports at or below it.
const clusterPortMax = 65535 - 10000

// loopback: the address of a port on 127.0.0.1.
func loopback(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

func TestMain(m *testing.M) {
	library = need("PATHLOCK_LIBRARY")
	vectors = need("PATHLOCK_VECTORS")
	cli = need("PATHLOCK_CLI")
	env, err := startTestenv("redis", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisAddr = loopback(env.Port)
	redisURL = env.URL
	code := m.Run()
	env.stop()
	os.Exit(code)
}

var nsCounter int

// newNS returns a fresh namespace for one test.
func newNS(t *testing.T) string {
	nsCounter++
	return fmt.Sprintf("go-%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "."), os.Getpid(), nsCounter)
}

// newClient: a client of the test server (connect).
func newClient(t *testing.T) *pathlock.Client {
	t.Helper()
	return connect(t, pathlock.Options{URL: redisURL})
}

// connect opens a client with opts and the test library, loaded; it is
// closed when the test ends.
func connect(t *testing.T, opts pathlock.Options) *pathlock.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts.LibraryFile = library
	c, err := pathlock.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LoadLibrary(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// acquired: the lock req asks for, granted at once, or the test fails.
func acquired(t *testing.T, c *pathlock.Client, req pathlock.Request) *pathlock.Lock {
	t.Helper()
	l, err := c.Acquire(context.Background(), req)
	if err != nil {
		t.Fatalf("acquire %s %v: %v", req.Op, req.Paths, err)
	}
	return l
}

// readVectors decodes the test vectors file name (PATHLOCK_VECTORS) into v.
func readVectors(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectors, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// eventually polls cond (a condition on the server's state, never a
// timing claim) until it holds, failing after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cppShell is the C++ `pathlock shell` on the test server.
type cppShell struct {
	cmd *exec.Cmd
	in  *bufio.Writer
	out *bufio.Scanner
}

func startCpp(t *testing.T, ns string) *cppShell {
	t.Helper()
	cmd := exec.Command(cli, "shell", "--backend", "redis", "--redis", redisURL, "--namespace", ns)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &cppShell{cmd: cmd, in: bufio.NewWriter(stdin), out: bufio.NewScanner(stdout)}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	return s
}

func (s *cppShell) send(t *testing.T, line string) {
	t.Helper()
	fmt.Fprintln(s.in, line)
	if err := s.in.Flush(); err != nil {
		t.Fatal(err)
	}
}

func (s *cppShell) read(t *testing.T) string {
	t.Helper()
	if !s.out.Scan() {
		t.Fatalf("the C++ shell ended: %v", s.out.Err())
	}
	return s.out.Text()
}

func (s *cppShell) do(t *testing.T, line string) string {
	t.Helper()
	s.send(t, line)
	return s.read(t)
}

func repoFile(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}
