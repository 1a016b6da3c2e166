// Command pathlock-go-bench measures the Go client: --callers goroutines
// share one client; caller c runs --pairs acquire + release pairs, one after
// the other, of `upload` on /bench/c<c>/<i % 1000>/f (the workload of every
// client's line in tools/dev/clients_bench.py). It prints, as JSON, pairs/s
// (all pairs over the wall time) and the p50 and p99 of one pair.
//
//	pathlock-go-bench --redis URL [--library FILE] [--pairs N] [--callers N] [--namespace NS]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"pathlock.dev/pathlock"
)

func main() {
	url := flag.String("redis", "", "redis URL")
	lib := flag.String("library", os.Getenv("PATHLOCK_LIBRARY"), "pathlock_library.lua to load")
	pairs := flag.Int("pairs", 5000, "acquire + release pairs per caller")
	callers := flag.Int("callers", 1, "goroutines sharing the client")
	ns := flag.String("namespace", "go-bench", "namespace")
	flag.Parse()
	if *url == "" || *pairs < 1 || *callers < 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx := context.Background()
	c, err := pathlock.New(ctx, pathlock.Options{URL: *url, LibraryFile: *lib})
	if err == nil && *lib != "" {
		err = c.LoadLibrary(ctx)
	}
	if err != nil {
		fail(err)
	}
	defer c.Close()
	runAll(ctx, c, *ns+"-warm", *callers, minInt(*pairs, 1000)) // connections, library, caches
	start := time.Now()
	lat := runAll(ctx, c, *ns, *callers, *pairs)
	total := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b, _ := json.Marshal(map[string]interface{}{
		"client":       "go",
		"callers":      *callers,
		"pairs":        len(lat),
		"pairs_per_s":  float64(len(lat)) / total.Seconds(),
		"p50_us":       lat[len(lat)/2].Microseconds(),
		"p99_us":       lat[len(lat)*99/100].Microseconds(),
		"go_client":    pathlock.Version,
		"library_name": c.LibraryName(),
	})
	fmt.Println(string(b))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pathlock-go-bench:", err)
	os.Exit(1)
}

// runAll runs callers goroutines of pairs pairs each and returns the
// duration of every pair.
func runAll(ctx context.Context, c *pathlock.Client, ns string, callers, pairs int) []time.Duration {
	lat := make([][]time.Duration, callers)
	var wg sync.WaitGroup
	for i := range lat {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lat[i] = runCaller(ctx, c, ns, i, pairs)
		}(i)
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return all
}

func runCaller(ctx context.Context, c *pathlock.Client, ns string, caller, pairs int) []time.Duration {
	lat := make([]time.Duration, pairs)
	for i := range lat {
		t := time.Now()
		req := pathlock.Request{Namespace: ns, Owner: "bench", Op: "upload",
			Paths: []string{fmt.Sprintf("/bench/c%d/%d/f", caller, i%1000)}}
		l, err := c.Acquire(ctx, req)
		if err != nil {
			fail(err)
		}
		if err := l.Release(ctx); err != nil {
			fail(err)
		}
		lat[i] = time.Since(t)
	}
	return lat
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}
