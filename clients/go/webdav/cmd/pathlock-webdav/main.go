// pathlock-webdav serves a directory over WebDAV with Go's standard handler
// (golang.org/x/net/webdav) and pathlock's lock system, so that any number
// of instances on one Redis share their locks (docs/webdav.md):
//
//	pathlock-webdav --root DIR --listen ADDR --redis URL [--library FILE]
//	                [--namespace NS] [--prefix /dav] [--locks pathlock|memory]
//
// --library: the Functions library of matrix/webdav.json (loaded if the
// server lacks it); without it, the one a released module carries
// (webdav.Library), else (the sources) the one pathlock library loaded on
// the server. --locks memory: the handler's own in-memory lock system
// (webdav.NewMemLS), for comparison; then --redis is not needed. With
// pathlock, shared LOCKs are granted too (plwebdav.SharedLocks).
// It prints "pathlock-webdav: serving DIR on http://HOST:PORT" once it
// listens and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/net/webdav"

	"pathlock.dev/pathlock"
	plwebdav "pathlock.dev/pathlock/webdav"
)

type config struct {
	root, listen, redis, library, namespace, prefix, locks string
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("pathlock-webdav", flag.ContinueOnError)
	fs.StringVar(&c.root, "root", "", "the directory served (required)")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "the address to listen on (port 0: any free port)")
	fs.StringVar(&c.redis, "redis", "", "the Redis URL of pathlock (required with --locks pathlock)")
	fs.StringVar(&c.library, "library", "", "pathlock_library.lua of matrix/webdav.json (default: the released module's)")
	fs.StringVar(&c.namespace, "namespace", "webdav", "the pathlock namespace of the locks")
	fs.StringVar(&c.prefix, "prefix", "", "URL path prefix to strip (e.g. /dav)")
	fs.StringVar(&c.locks, "locks", "pathlock", "the lock system: pathlock, or memory (webdav.NewMemLS, one process only)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.root == "" {
		return c, errors.New("--root is required")
	}
	if st, err := os.Stat(c.root); err != nil || !st.IsDir() {
		return c, fmt.Errorf("--root %s: not a directory", c.root)
	}
	if c.locks != "pathlock" && c.locks != "memory" {
		return c, fmt.Errorf("--locks %q: pathlock or memory", c.locks)
	}
	if c.locks == "pathlock" && c.redis == "" {
		return c, errors.New("--redis is required (or --locks memory)")
	}
	return c, nil
}

// handler builds the standard handler on the chosen lock system; the
// returned function closes what it opened.
func handler(ctx context.Context, c config) (http.Handler, func(), error) {
	h := &webdav.Handler{Prefix: c.prefix, FileSystem: webdav.Dir(c.root), Logger: logError}
	if c.locks == "memory" {
		h.LockSystem = webdav.NewMemLS()
		return h, func() {}, nil
	}
	options := pathlock.Options{URL: c.redis, LibraryFile: c.library}
	if c.library == "" {
		// A released module carries the library of matrix/webdav.json; the
		// sources do not (then the library already on the server is used).
		if code, err := plwebdav.Library(); err == nil {
			options.LibraryCode = code
		} else if !errors.Is(err, plwebdav.ErrNoLibrary) {
			return nil, nil, err
		}
	}
	client, err := pathlock.New(ctx, options)
	if err != nil {
		return nil, nil, err
	}
	ls, err := plwebdav.New(client, plwebdav.Options{Namespace: c.namespace})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	h.LockSystem = ls
	h.FileSystem = plwebdav.Discovery(h.FileSystem, ls)
	return plwebdav.SharedLocks(h, ls), func() { ls.Close(); client.Close() }, nil
}

func logError(r *http.Request, err error) {
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, webdav.ErrLocked) {
		log.Printf("%s %s: %v", r.Method, r.URL.Path, err)
	}
}

func run(args []string) error {
	c, err := parse(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, closeAll, err := handler(ctx, c)
	if err != nil {
		return err
	}
	defer closeAll()
	l, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	fmt.Printf("pathlock-webdav: serving %s on http://%s (locks: %s)\n", c.root, l.Addr(), c.locks)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

func main() {
	if err := run(os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "pathlock-webdav:", err)
		os.Exit(2)
	}
}
