package pathlock_test

import (
	"bufio"
	"context"
	"encoding/json"
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
)

// The suite runs against a real redis-server it starts on a free loopback
// port. It needs:
//
//	PATHLOCK_LIBRARY  the Functions library file (pathlock_library.lua)
//	PATHLOCK_VECTORS  the folder of paths.json and matrix-cases.json
//	PATHLOCK_CLI      the C++ pathlock program (interop tests)
//	REDIS_SERVER      optional, default redis-server from PATH
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

// freePort: a loopback port that was free a moment ago (the OS's choice).
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// clusterPortMax: the highest port a Redis Cluster node may listen on. Its
// cluster bus listens on port + 10000 (no --cluster-port is given), which
// must be a port too; redis-server refuses to start above it.
const clusterPortMax = 65535 - 10000

// freeClusterPort: freePort for a Redis Cluster node: drawn again while
// the OS gives one above clusterPortMax (its ephemeral range often goes
// up to 60999).
func freeClusterPort() int {
	for {
		if p := freePort(); p <= clusterPortMax {
			return p
		}
	}
}

// loopback: the address of a port on 127.0.0.1.
func loopback(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// startRedis starts redis-server in dir on port, with a configuration file
// when conf is not "" (a sentinel's) and extra arguments, and waits until
// it answers PING with INFO naming its own process (not another test's
// server that holds the port); the returned function stops it. An error
// when it exits first (e.g. the port, or its bus port, was taken).
func startRedis(dir, conf string, port int, extra ...string) (func(), error) {
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	var args []string
	if conf != "" {
		args = append(args, conf)
	}
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir)
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() { _ = cmd.Process.Kill(); <-exited }
	addr := loopback(port)
	self := fmt.Sprintf("process_id:%d\r\n", cmd.Process.Pid)
	for i := 0; ; i++ {
		select {
		case <-exited:
			return nil, fmt.Errorf("redis-server on %s exited before it answered", addr)
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

// startRedisOnFreePort: startRedis on a port from draw (freePort, or
// freeClusterPort for a Cluster node) with the arguments args gives for
// it (args may be nil), on another port when the server does not start (a
// parallel test took the port meanwhile): five tries. Returns the port.
func startRedisOnFreePort(draw func() int, dir, conf string, args func(port int) []string) (int, func(), error) {
	var err error
	for try := 0; try < 5; try++ {
		port := draw()
		var extra []string
		if args != nil {
			extra = args(port)
		}
		var stop func()
		if stop, err = startRedis(dir, conf, port, extra...); err == nil {
			return port, stop, nil
		}
	}
	return 0, nil, err
}

// serveRedis: startRedisOnFreePort for one test, which fails at once when
// the server does not start and stops it when the test ends.
func serveRedis(t *testing.T, draw func() int, dir, conf string, args func(port int) []string) int {
	t.Helper()
	port, stop, err := startRedisOnFreePort(draw, dir, conf, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return port
}

// fixedArgs: arguments that do not depend on the port.
func fixedArgs(extra ...string) func(int) []string {
	return func(int) []string { return extra }
}

func TestMain(m *testing.M) {
	library = need("PATHLOCK_LIBRARY")
	vectors = need("PATHLOCK_VECTORS")
	cli = need("PATHLOCK_CLI")
	dir, err := os.MkdirTemp("", "pathlock-go-test")
	if err != nil {
		panic(err)
	}
	port, stop, err := startRedisOnFreePort(freePort, dir, "", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisAddr = loopback(port)
	redisURL = "redis://" + redisAddr
	code := m.Run()
	stop()
	os.RemoveAll(dir)
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
