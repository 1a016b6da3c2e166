// Command pathlock-go-shell is the Go client's driver: it speaks the line
// protocol of `pathlock shell` (docs/cli.md) on stdin and stdout, so the
// conformance kit (clients/kit) can drive the Go client.
//
//	pathlock-go-shell --redis URL [--namespace NS] [--library FILE]
//
// --library (or $PATHLOCK_LIBRARY) names the Functions library file to load
// and call; without either, the one pathlock library loaded on the server is
// used. --matrix is not supported (exit status 2): the library text decides
// the matrix.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"pathlock.dev/pathlock"
)

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "pathlock-go-shell: %s\nusage: pathlock-go-shell [--backend redis] --redis URL [--namespace NS] [--library FILE]\n", msg)
	os.Exit(2)
}

func main() {
	opts := options(os.Args[1:])
	ns := "default"
	if v, ok := opts["--namespace"]; ok {
		ns = v
	}
	if err := pathlock.CheckNamespace(ns); err != nil {
		fmt.Fprintln(os.Stderr, "pathlock-go-shell:", err)
		os.Exit(1)
	}
	c, err := open(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pathlock-go-shell:", err)
		os.Exit(1)
	}
	defer c.Close()
	sh := &shell{c: c, ns: ns, out: bufio.NewWriter(os.Stdout), kept: map[string]*pathlock.Keeper{}}
	sh.run(os.Stdin)
	for id := range sh.kept { // end of input: no lock is kept any longer
		sh.forget(id)
	}
}

// options reads the command line (exit status 2 on a bad one).
func options(args []string) map[string]string {
	opts := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "--redis", "--namespace", "--library", "--backend", "--matrix":
		default:
			usage(fmt.Sprintf("unknown option or stray argument %q", a))
		}
		if !hasVal {
			if i+1 >= len(args) {
				usage(name + " needs a value")
			}
			i++
			val = args[i]
		}
		if _, dup := opts[name]; dup {
			usage(name + " given twice")
		}
		opts[name] = val
	}
	if _, ok := opts["--matrix"]; ok {
		usage("--matrix is not supported by the Go client (its library file decides the matrix; use --library)")
	}
	if b, ok := opts["--backend"]; ok && b != "redis" {
		usage("only --backend redis is supported")
	}
	if opts["--redis"] == "" {
		usage("--redis URL is required")
	}
	return opts
}

// open connects the client, loading --library (or $PATHLOCK_LIBRARY) if given.
func open(opts map[string]string) (*pathlock.Client, error) {
	lib := opts["--library"]
	if lib == "" {
		lib = os.Getenv("PATHLOCK_LIBRARY")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pathlock.New(ctx, pathlock.Options{URL: opts["--redis"], LibraryFile: lib})
	if err == nil && lib != "" {
		if err = c.LoadLibrary(ctx); err != nil {
			c.Close()
		}
	}
	return c, err
}

type shell struct {
	c    *pathlock.Client
	ns   string
	out  *bufio.Writer
	kept map[string]*pathlock.Keeper // keep, kept, unkeep: by lock id
}

// reply writes one JSON object and flushes.
func (s *shell) reply(v interface{}) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.Reset()
		b.WriteString(`{"error":"cannot encode the answer"}` + "\n")
	}
	s.out.Write(b.Bytes())
	s.out.Flush()
}

// fail answers an error; a call that gave up at its deadline= says so.
func (s *shell) fail(err error) {
	if errors.Is(err, context.DeadlineExceeded) {
		s.reply(obj{{"error", message(err)}, {"timed_out", true}})
		return
	}
	s.reply(obj{{"error", message(err)}})
}

func message(err error) string {
	var inv *pathlock.InvalidError
	if errors.As(err, &inv) {
		return inv.Message
	}
	return strings.TrimPrefix(err.Error(), "pathlock: ")
}

// obj is a JSON object that keeps its key order.
type obj []kv

type kv struct {
	k string
	v interface{}
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		for _, x := range []interface{}{e.k, e.v} {
			var w bytes.Buffer
			enc := json.NewEncoder(&w)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(x); err != nil {
				return nil, err
			}
			b.Write(bytes.TrimRight(w.Bytes(), "\n"))
			if x == interface{}(e.k) {
				b.WriteByte(':')
			}
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (s *shell) run(in io.Reader) {
	lines := make(chan string)
	go func() {
		r := bufio.NewReaderSize(in, 64*1024)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				lines <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	var queue []string
	for {
		var line string
		if len(queue) > 0 {
			line, queue = queue[0], queue[1:]
		} else {
			l, ok := <-lines
			if !ok {
				return
			}
			line = l
		}
		more := s.line(line, lines)
		queue = append(more, queue...)
	}
}

// line answers one line. An acquire that waits reads the lines that arrive
// meanwhile: `cancel` stops it, the others are returned, to be answered
// after it in order.
func (s *shell) line(line string, lines <-chan string) []string {
	if line == cancelledMarker {
		s.reply(obj{{"cancelled", true}})
		return nil
	}
	if trimmed := strings.TrimLeft(line, " \t"); strings.HasPrefix(trimmed, "#") ||
		(trimmed == "" && !strings.ContainsRune(line, '\r')) {
		return nil // blank and comment lines get no answer
	}
	if strings.ContainsRune(line, '\r') {
		s.reply(obj{{"error", "the line holds a carriage return (lines end with LF only)"}})
		return nil
	}
	w, err := split(line)
	if err != nil {
		s.fail(err)
		return nil
	}
	if len(w) == 0 {
		return nil
	}
	cmd, args := w[0].text, w[1:] // a quoted command word is the command (docs/cli.md#quoting)
	switch cmd {
	case "hello":
		if len(args) != 0 {
			s.fail(errors.New("hello takes no argument"))
			return nil
		}
		s.reply(obj{{"client", "pathlock-go"}, {"version", pathlock.Version}, {"features", []string{"cancel", "blockers", "waiters", "deadline", "keep", "protocol", "convert"}}})
	case "cancel":
		if len(args) != 0 {
			s.fail(errors.New("cancel takes no argument"))
			return nil
		}
		s.reply(obj{{"cancelled", false}})
	case "acquire":
		return s.acquire(args, lines)
	case "convert":
		s.convert(args)
	case "protocol":
		s.protocol(args)
	case "held", "release", "renew":
		s.idToken(cmd, args)
	case "force-release":
		s.forceRelease(args)
	case "locks":
		s.locks(args)
	case "blockers":
		s.blockers(args)
	case "waiters":
		s.waiters(args)
	case "keep":
		s.keep(args)
	case "kept", "unkeep":
		s.keptOrUnkeep(cmd, args)
	default:
		s.reply(obj{{"error", fmt.Sprintf("unknown command '%s' (hello, acquire, convert, release, renew, held, locks, force-release, blockers, waiters, cancel, keep, kept, unkeep, protocol)", cmd)}})
	}
	return nil
}
