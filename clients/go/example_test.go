package pathlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"pathlock.dev/pathlock"
)

func Example() {
	ctx := context.Background()
	c, err := pathlock.New(ctx, pathlock.Options{URL: redisURL, LibraryFile: library})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	lock, err := c.Acquire(ctx, pathlock.Request{Namespace: "example", Owner: "alice", Op: "delete_folder", Paths: []string{"/p/A"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.Acquire(ctx, pathlock.Request{Namespace: "example", Owner: "bob", Op: "upload", Paths: []string{"/p/A/x"}})
	var refused *pathlock.RefusedError
	if errors.As(err, &refused) {
		fmt.Println("refused by", refused.Conflict.Owner, refused.Conflict.Op, refused.Conflict.Path, refused.Conflict.Relation)
	}
	fmt.Println(lock.Release(ctx))
	// Output:
	// refused by alice delete_folder /p/A held_ancestor
	// <nil>
}

func ExampleClient_Acquire_wait() {
	ctx := context.Background()
	c, err := pathlock.New(ctx, pathlock.Options{URL: redisURL, LibraryFile: library})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	holder, _ := c.Acquire(ctx, pathlock.Request{Namespace: "example-wait", Owner: "alice", Op: "upload", Paths: []string{"/f"}})
	go func() {
		// Released while bob waits: bob is woken.
		for {
			ws, _ := c.Waiters(ctx, "example-wait", "/", 10)
			if len(ws) == 1 {
				holder.Release(ctx)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	// Wait up to 10 s; cancelling ctx would end the wait at once.
	lock, err := c.Acquire(ctx, pathlock.Request{Namespace: "example-wait", Owner: "bob", Op: "delete_file", Paths: []string{"/f"}, Wait: 10 * time.Second})
	fmt.Println(err)
	fmt.Println(lock.Release(ctx))
	// Output:
	// <nil>
	// <nil>
}

// The program docs/go.md shows is examples/move/main.go, unchanged; it
// builds and runs against the test server.
func TestDocExample(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("examples", "move", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(repoFile("docs", "go.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```go\n"+string(src)+"```\n") {
		t.Fatal("docs/go.md does not show clients/go/examples/move/main.go unchanged in a ```go block")
	}
	bin := filepath.Join(t.TempDir(), "move")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goTool, "build", "-o", bin, "./examples/move").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PATHLOCK_REDIS_URL="+redisURL, "PATHLOCK_LIBRARY="+library)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "move /p/A/C -> /p/B: 200 moved") {
		t.Fatalf("unexpected output:\n%s", out)
	}
}
