// A service handler that moves a folder under a pathlock lock, with a keeper
// renewing the lease and storage that checks fences: the example of
// docs/go.md, which shows this file. The Go tests build and run it.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"pathlock.dev/pathlock"
)

// fencedStore keeps the highest fence it accepted per path and refuses
// lower ones, so a holder that lost its lease cannot overwrite newer work.
type fencedStore struct {
	mu     sync.Mutex
	fences map[string]uint64
	rows   map[string]string
}

func (s *fencedStore) write(ctx context.Context, lock *pathlock.Lock, path, value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lock.Fence() < s.fences[path] {
		return false // 1. compare the fence
	}
	if held, err := lock.Held(ctx); err != nil || !held {
		return false // 2. check the hold
	}
	s.fences[path] = lock.Fence() // 3. commit
	s.rows[path] = value
	return true
}

func moveFolder(ctx context.Context, c *pathlock.Client, store *fencedStore, project, user, src, dst string) (int, string) {
	lock, err := c.Acquire(ctx, pathlock.Request{
		Namespace: project,
		Owner:     user,
		Op:        "move_folder",
		Paths:     []string{src, dst},
		TTL:       10 * time.Second,
		Wait:      2 * time.Second,
	})
	var refused *pathlock.RefusedError
	switch {
	case errors.As(err, &refused):
		cf := refused.Conflict
		return 409, fmt.Sprintf("%s is running %s on %s; try again later", cf.Owner, cf.Op, cf.Path)
	case errors.Is(err, pathlock.ErrInvalid): // e.g. a folder moved into itself
		return 400, err.Error()
	case err != nil: // Redis unreachable, ctx cancelled, ...
		return 503, err.Error()
	}
	defer lock.Release(context.Background())
	keeper := lock.Keep(ctx, pathlock.KeepOptions{})
	defer keeper.Stop()

	// The write runs under the keeper's context: it ends if the lease is lost.
	if !store.write(keeper.Context(), lock, dst, "moved from "+src) {
		return 409, "storage refused a stale write"
	}
	if keeper.Err() != nil {
		return 409, "the lock was lost before the move finished"
	}
	return 200, "moved"
}

func main() {
	ctx := context.Background()
	opts := pathlock.Options{URL: os.Getenv("PATHLOCK_REDIS_URL")} // e.g. redis://127.0.0.1:6379
	if file := os.Getenv("PATHLOCK_LIBRARY"); file != "" {
		opts.LibraryFile = file // the .lua of a matrix of your own
	} else if code, err := pathlock.DefaultLibrary(); err == nil {
		opts.LibraryCode = code // the shipped matrix's, inside the released module
	} else {
		log.Fatal(err)
	}
	c, err := pathlock.New(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	store := &fencedStore{fences: map[string]uint64{}, rows: map[string]string{}}
	failures := 0
	expect := func(what string, got, want int, msg string) {
		fmt.Printf("%s: %d %s\n", what, got, msg)
		if got != want {
			failures++
		}
	}
	status, msg := moveFolder(ctx, c, store, "project-42", "alice", "/p/A/C", "/p/B")
	expect("move /p/A/C -> /p/B", status, 200, msg)
	status, msg = moveFolder(ctx, c, store, "project-42", "alice", "/p/A", "/p/A/C")
	expect("move /p/A -> /p/A/C", status, 400, msg)
	if failures != 0 {
		os.Exit(1)
	}
}
