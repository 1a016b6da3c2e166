// Command pathlock-go-bench measures the Go client: acquire + release pairs
// of one upload lock on one Redis server, one after another, and prints
// pairs/s and the p50 of one pair, as JSON.
//
//	pathlock-go-bench --redis URL [--library FILE] [--pairs N] [--namespace NS]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"pathlock.dev/pathlock"
)

func main() {
	url := flag.String("redis", "", "redis URL")
	lib := flag.String("library", os.Getenv("PATHLOCK_LIBRARY"), "pathlock_library.lua to load")
	pairs := flag.Int("pairs", 20000, "acquire + release pairs")
	ns := flag.String("namespace", "go-bench", "namespace")
	flag.Parse()
	if *url == "" || *pairs < 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx := context.Background()
	c, err := pathlock.New(ctx, pathlock.Options{URL: *url, LibraryFile: *lib})
	if err == nil && *lib != "" {
		err = c.LoadLibrary(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pathlock-go-bench:", err)
		os.Exit(1)
	}
	defer c.Close()
	req := pathlock.Request{Namespace: *ns, Owner: "bench", Op: "upload", Paths: []string{"/bench/a/b/file"}}
	pair := func() {
		l, err := c.Acquire(ctx, req)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pathlock-go-bench:", err)
			os.Exit(1)
		}
		if err := l.Release(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "pathlock-go-bench:", err)
			os.Exit(1)
		}
	}
	for i := 0; i < 200; i++ { // warm up the pool and the library's caches
		pair()
	}
	lat := make([]time.Duration, *pairs)
	start := time.Now()
	for i := range lat {
		t := time.Now()
		pair()
		lat[i] = time.Since(t)
	}
	total := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	out := map[string]interface{}{
		"client":       "go",
		"pairs":        *pairs,
		"pairs_per_s":  float64(*pairs) / total.Seconds(),
		"p50_us":       lat[len(lat)/2].Microseconds(),
		"p99_us":       lat[len(lat)*99/100].Microseconds(),
		"go_client":    pathlock.Version,
		"library_name": c.LibraryName(),
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
