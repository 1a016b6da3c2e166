package webdav_test

import (
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"
)

type granted struct {
	path string
	inf  bool
}

// conflicts: do two exclusive locks of RFC 4918 overlap?
func conflicts(x, y granted) bool {
	inside := func(p, root string) bool { return strings.HasPrefix(p, root+"/") }
	return x.path == y.path || (x.inf && inside(y.path, x.path)) || (y.inf && inside(x.path, y.path))
}

type loadResult struct{ grants, refusals, violations int }

// runLoad: 16 clients LOCK (Depth 0 or infinity, at random) overlapping
// collections through the given instances at once, 30 times each; every
// grant is checked against the locks the test holds at that moment
// (registered after the LOCK answered, removed before the UNLOCK is sent,
// so each registration lies inside the server's own grant). unlockAnywhere:
// UNLOCK through a random instance, else through the one that granted.
func runLoad(t *testing.T, servers []*instance, paths []string, unlockAnywhere bool) loadResult {
	var mu sync.Mutex
	held := map[string]granted{}
	var res loadResult
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(rnd *rand.Rand) {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				g := granted{path: paths[rnd.Intn(len(paths))], inf: rnd.Intn(2) == 0}
				depth := map[bool]string{true: "infinity", false: "0"}[g.inf]
				in := servers[rnd.Intn(len(servers))]
				status, token := lock(t, in.url+g.path, depth, "Second-60", "load")
				mu.Lock()
				if status == 200 {
					res.grants++
					for _, h := range held {
						if conflicts(g, h) {
							res.violations++
						}
					}
					held[token] = g
				} else if status == 423 {
					res.refusals++
				} else {
					t.Errorf("LOCK %s: %d", g.path, status)
				}
				mu.Unlock()
				if status != 200 {
					continue
				}
				time.Sleep(time.Duration(rnd.Intn(3)) * time.Millisecond) // hold the lock a moment
				mu.Lock()
				delete(held, token)
				mu.Unlock()
				if unlockAnywhere {
					in = servers[rnd.Intn(len(servers))]
				}
				if r := do(t, "UNLOCK", in.url+g.path, map[string]string{"Lock-Token": "<" + token + ">"}, ""); r.status != 204 {
					t.Errorf("UNLOCK %s: %d", g.path, r.status)
				}
			}
		}(rand.New(rand.NewSource(int64(w) + time.Now().UnixNano())))
	}
	wg.Wait()
	return res
}

func makeCollections(t *testing.T, in *instance, paths []string) {
	for _, p := range paths {
		if r := do(t, "MKCOL", in.url+p, nil, ""); r.status != 201 {
			t.Fatalf("MKCOL %s: %d", p, r.status)
		}
	}
}

var loadPaths = []string{"/p", "/p/a", "/p/a/b", "/p/a/b/c", "/p/d", "/p/d/e"}

// Two pathlock-webdav instances on one Redis grant no two conflicting locks.
func TestNoConflictingLocksUnderLoad(t *testing.T) {
	root, ns := t.TempDir(), newNS()
	servers := []*instance{servePathlock(t, root, ns), servePathlock(t, root, ns)}
	makeCollections(t, servers[0], loadPaths)
	res := runLoad(t, servers, loadPaths, true)
	t.Logf("pathlock, two instances: %d locks granted, %d refused (423), %d conflicting grants", res.grants, res.refusals, res.violations)
	if res.violations != 0 {
		t.Errorf("%d conflicting locks granted", res.violations)
	}
	if res.grants == 0 || res.refusals == 0 {
		t.Errorf("the load did not contend: %d granted, %d refused", res.grants, res.refusals)
	}
}

// The check above can fail: two instances with webdav.NewMemLS, each with
// its own locks, grant conflicting ones under the same load.
func TestTheLoadCheckSeesTwoMemLSInstancesConflict(t *testing.T) {
	root := t.TempDir()
	servers := []*instance{serve(t, root, "--locks", "memory"), serve(t, root, "--locks", "memory")}
	makeCollections(t, servers[0], loadPaths)
	res := runLoad(t, servers, loadPaths, false)
	t.Logf("webdav.NewMemLS, two instances: %d locks granted, %d refused (423), %d conflicting grants", res.grants, res.refusals, res.violations)
	if res.violations == 0 {
		t.Errorf("no conflicting grant seen between two in-memory lock systems")
	}
}
