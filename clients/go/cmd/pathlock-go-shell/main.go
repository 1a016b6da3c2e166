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
	"strconv"
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
	trimmed := strings.TrimLeft(line, " \t")
	if trimmed == "" && !strings.ContainsRune(line, '\r') {
		return nil
	}
	if strings.HasPrefix(trimmed, "#") {
		return nil
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
		s.reply(obj{{"client", "pathlock-go"}, {"version", pathlock.Version}, {"features", []string{"cancel", "blockers", "waiters", "deadline", "keep"}}})
	case "cancel":
		if len(args) != 0 {
			s.fail(errors.New("cancel takes no argument"))
			return nil
		}
		s.reply(obj{{"cancelled", false}})
	case "acquire":
		return s.acquire(args, lines)
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
		s.reply(obj{{"error", fmt.Sprintf("unknown command '%s' (hello, acquire, release, renew, held, locks, force-release, blockers, waiters, cancel, keep, kept, unkeep)", cmd)}})
	}
	return nil
}

func ctx() context.Context { return context.Background() }

// callCtx: the context of a call with deadline=MS (the caller gives up after
// MS), or context.Background() without it.
func callCtx(o map[string]string) (context.Context, context.CancelFunc, error) {
	v, ok := o["deadline"]
	if !ok {
		return context.Background(), func() {}, nil
	}
	n, err := number("deadline", v, 1, 604800000)
	if err != nil {
		return nil, nil, err
	}
	c, cancel := context.WithTimeout(context.Background(), time.Duration(n)*time.Millisecond)
	return c, cancel, nil
}

func (s *shell) forceRelease(args []word) {
	if len(args) != 1 { // the one word is the ID whatever it holds
		s.fail(errors.New("usage: force-release ID"))
		return
	}
	ok, err := s.c.ForceRelease(ctx(), s.ns, args[0].text)
	if err != nil {
		s.fail(err)
		return
	}
	s.reply(obj{{"released", ok}})
}

type word struct {
	text   string
	quoted bool
}

// split reads words: separated by spaces or tabs; "…" quotes, with \" and
// \\ the only escapes inside.
func split(line string) ([]word, error) {
	var out []word
	i := 0
	for i < len(line) {
		c := line[i]
		if c == ' ' || c == '\t' {
			i++
			continue
		}
		if c == '"' {
			var b strings.Builder
			i++
			closed := false
			for i < len(line) {
				c := line[i]
				if c == '\\' {
					if i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
						b.WriteByte(line[i+1])
						i += 2
						continue
					}
					return nil, errors.New(`bad escape in a quoted word (only \" and \\)`)
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(c)
				i++
			}
			if !closed {
				return nil, errors.New("unterminated quote")
			}
			if i < len(line) && line[i] != ' ' && line[i] != '\t' {
				return nil, errors.New("a quoted word must be followed by a blank")
			}
			out = append(out, word{b.String(), true})
			continue
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		out = append(out, word{line[i:j], false})
		i = j
	}
	return out, nil
}

// parse separates positional words from name=value options (unquoted words
// whose name is one of allowed); an option given twice is an error.
func parse(args []word, allowed []string) ([]string, map[string]string, error) {
	var pos []string
	opts := map[string]string{}
	for _, a := range args {
		if !a.quoted {
			if name, val, ok := strings.Cut(a.text, "="); ok && !strings.HasPrefix(a.text, "/") {
				known := false
				for _, n := range allowed {
					known = known || n == name
				}
				if !known {
					return nil, nil, fmt.Errorf("unknown option '%s'", name)
				}
				if _, dup := opts[name]; dup {
					return nil, nil, fmt.Errorf("option '%s' given twice", name)
				}
				opts[name] = val
				continue
			}
		}
		pos = append(pos, a.text)
	}
	return pos, opts, nil
}

func number(name, v string, lo, hi int64) (int64, error) {
	if v == "" || len(v) > 15 || strings.Trim(v, "0123456789") != "" {
		return 0, fmt.Errorf("%s=%s is not a number", name, v)
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s %d is outside %d..%d", name, n, lo, hi)
	}
	return n, nil
}

// prefixed parses `COMMAND [PREFIX] options`: the prefix ("/" when none is
// given) and the options; more than one positional word is the usage error.
func prefixed(args []word, allowed []string, usage string) (string, map[string]string, error) {
	pos, o, err := parse(args, allowed)
	if err == nil && len(pos) > 1 {
		err = errors.New(usage)
	}
	if err != nil || len(pos) == 0 {
		return "/", o, err
	}
	return pos[0], o, nil
}

// rowLimit is the limit=N of blockers and waiters: 1..1000, 1000 when absent.
func rowLimit(o map[string]string) (int64, error) {
	v, ok := o["limit"]
	if !ok {
		return 1000, nil
	}
	return number("limit", v, 1, 1000)
}

func boolean(name, v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s=%s: true or false", name, v)
}

func (s *shell) acquire(args []word, lines <-chan string) []string {
	req, o, err := s.request(args)
	var call context.Context
	cancel := context.CancelFunc(func() {})
	if err == nil {
		call, cancel, err = callCtx(o)
	}
	defer cancel()
	if err != nil {
		s.fail(err)
		return nil
	}
	var lock *pathlock.Lock
	var held []string
	cancelled := false
	if req.Wait > 0 {
		lock, held, cancelled, err = s.await(call, req, lines)
	} else {
		lock, err = s.c.Acquire(call, req)
	}
	if cancelled && err == nil {
		// The grant came before the cancel was seen: `cancelled` must mean
		// nothing held, so give it back.
		if rerr := lock.Release(context.Background()); rerr != nil {
			s.fail(rerr)
			return held
		}
		err = context.Canceled
	}
	s.answer(lock, err)
	return held
}

// request reads acquire's words into a Request.
func (s *shell) request(args []word) (pathlock.Request, map[string]string, error) {
	req := pathlock.Request{Namespace: s.ns}
	pos, o, err := parse(args, []string{"ttl", "wait", "fair", "reenter", "token", "key", "deadline"})
	if err != nil {
		return req, o, err
	}
	if len(pos) < 3 {
		return req, o, errors.New("acquire OWNER OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false] [reenter=ID token=TOKEN] [key=KEY] [deadline=MS]")
	}
	req.Owner, req.Op, req.Paths = pos[0], pos[1], pos[2:]
	for _, d := range []struct {
		name string
		min  int64
		into *time.Duration
	}{{"ttl", 1, &req.TTL}, {"wait", 0, &req.Wait}} {
		if v, ok := o[d.name]; ok {
			n, err := number(d.name, v, d.min, 604800000)
			if err != nil {
				return req, o, err
			}
			*d.into = time.Duration(n) * time.Millisecond
		}
	}
	if v, ok := o["fair"]; ok {
		b, err := boolean("fair", v)
		if err != nil {
			return req, o, err
		}
		req.Unfair = !b
	}
	return req, o, proofAndKey(&req, o)
}

// proofAndKey reads reenter=ID token=TOKEN and key=KEY.
func proofAndKey(req *pathlock.Request, o map[string]string) error {
	_, hasR := o["reenter"]
	_, hasT := o["token"]
	switch {
	case hasR != hasT:
		return errors.New("reenter=ID and token=TOKEN go together")
	case hasR && (o["reenter"] == "" || o["token"] == ""):
		return errors.New("reenter= and token= need values")
	case hasR:
		req.Reenter = pathlock.Proof{ID: o["reenter"], Token: o["token"]}
	}
	if v, ok := o["key"]; ok {
		if hasR {
			return errors.New("reenter= and key= exclude each other")
		}
		if v == "" {
			return errors.New("key= needs a value")
		}
		req.IdempotencyKey = v
	}
	return nil
}

// await runs a waiting acquire while reading the lines sent meanwhile: the
// first `cancel` cancels it (and is kept as cancelledMarker, to be answered
// in its place); the others are returned, to be answered after it.
func (s *shell) await(call context.Context, req pathlock.Request, lines <-chan string) (*pathlock.Lock, []string, bool, error) {
	cctx, cancel := context.WithCancel(call)
	defer cancel()
	var lock *pathlock.Lock
	var err error
	done := make(chan struct{})
	go func() {
		lock, err = s.c.Acquire(cctx, req)
		close(done)
	}()
	var held []string
	cancelled := false
	for in := lines; ; {
		select {
		case <-done:
			return lock, held, cancelled, err
		case l, ok := <-in:
			switch {
			case !ok:
				in = nil // end of input does not cancel
			case !cancelled && strings.Trim(l, " \t") == "cancel":
				cancelled = true
				cancel()
				held = append(held, cancelledMarker)
			default:
				held = append(held, l)
			}
		}
	}
}

// answer writes acquire's answer.
func (s *shell) answer(lock *pathlock.Lock, err error) {
	var refused *pathlock.RefusedError
	var over *pathlock.OverLimitError
	switch {
	case err == nil:
		s.reply(obj{{"granted", true}, {"id", lock.ID()}, {"token", lock.Token()}, {"fence", lock.Fence()},
			{"holds", lock.Holds()}, {"expires_in_ms", lock.ExpiresIn().Milliseconds()}})
	case errors.As(err, &refused):
		c := refused.Conflict
		s.reply(obj{{"granted", false}, {"conflict", obj{{"id", c.ID}, {"op", c.Op}, {"role", c.Role}, {"path", c.Path},
			{"owner", c.Owner}, {"expires_in_ms", c.ExpiresIn.Milliseconds()}, {"requested_role", c.RequestedRole},
			{"requested_path", c.RequestedPath}, {"relation", string(c.Relation)}, {"queued", c.Queued}}}})
	case errors.Is(err, pathlock.ErrNotHolder):
		s.reply(obj{{"granted", false}, {"not_holder", true}})
	case errors.As(err, &over):
		s.reply(obj{{"granted", false}, {"over_limit", obj{{"limit", string(over.Limit)}, {"max", over.Max},
			{"count", over.Count}}}})
	case errors.Is(err, context.Canceled):
		s.reply(obj{{"granted", false}, {"cancelled", true}})
	default:
		s.fail(err)
	}
}

// cancelledMarker stands for the `cancel` line that stopped a wait, among the
// lines read during it: answered {"cancelled":true} in its place. It holds a
// line feed, so no input line can be it (a line starting with NUL could
// spoof the old marker, issue 41).
const cancelledMarker = "\ncancelled"

// proofWords: ID and TOKEN are the first two words whatever they hold (an
// id no engine makes names no lock); renew may add one unquoted ttl=MS, as
// docs/cli.md's table has it, and held one deadline=MS (the kit's deadline
// feature, docs/clients.md).
func proofWords(cmd string, args []word) ([]string, map[string]string, error) {
	o := map[string]string{}
	option := map[string]string{"renew": "ttl", "held": "deadline"}[cmd]
	if option != "" && len(args) == 3 && !args[2].quoted && strings.HasPrefix(args[2].text, option+"=") {
		o[option] = strings.TrimPrefix(args[2].text, option+"=")
		args = args[:2]
	}
	if len(args) != 2 {
		if option != "" {
			return nil, nil, fmt.Errorf("usage: %s ID TOKEN [%s=MS]", cmd, option)
		}
		return nil, nil, fmt.Errorf("usage: %s ID TOKEN", cmd)
	}
	return []string{args[0].text, args[1].text}, o, nil
}

func (s *shell) idToken(cmd string, args []word) {
	pos, o, err := proofWords(cmd, args)
	if err != nil {
		s.fail(err)
		return
	}
	switch cmd {
	case "held":
		call, cancel, err := callCtx(o)
		if err != nil {
			s.fail(err)
			return
		}
		defer cancel()
		ok, err := s.c.Held(call, s.ns, pos[0], pos[1])
		if err != nil {
			s.fail(err)
			return
		}
		s.reply(obj{{"held", ok}})
	case "release":
		s.forget(pos[0]) // a released lock is no longer kept (nor lost)
		_, err := s.c.Release(ctx(), s.ns, pos[0], pos[1])
		if err != nil && !errors.Is(err, pathlock.ErrNotHolder) {
			s.fail(err)
			return
		}
		s.reply(obj{{"released", err == nil}})
	case "renew":
		var ttl time.Duration
		if v, ok := o["ttl"]; ok {
			n, err := number("ttl", v, 1, 604800000)
			if err != nil {
				s.fail(err)
				return
			}
			ttl = time.Duration(n) * time.Millisecond
		}
		_, err := s.c.Renew(ctx(), s.ns, pos[0], pos[1], ttl)
		if err != nil && !errors.Is(err, pathlock.ErrNotHolder) {
			s.fail(err)
			return
		}
		s.reply(obj{{"renewed", err == nil}})
	}
}

// keep ID TOKEN ttl=MS: the lock adopted (renewed now with ttl=MS, as
// renew does) and kept by its Keeper; {"keeping":false} when it is gone.
func (s *shell) keep(args []word) {
	if len(args) != 3 || args[2].quoted || !strings.HasPrefix(args[2].text, "ttl=") {
		s.fail(errors.New("usage: keep ID TOKEN ttl=MS"))
		return
	}
	n, err := number("ttl", strings.TrimPrefix(args[2].text, "ttl="), 1, 604800000)
	if err != nil {
		s.fail(err)
		return
	}
	proof := pathlock.Proof{ID: args[0].text, Token: args[1].text}
	lock, err := s.c.Adopt(ctx(), s.ns, proof, time.Duration(n)*time.Millisecond)
	if err != nil && !errors.Is(err, pathlock.ErrNotHolder) {
		s.fail(err)
		return
	}
	if err == nil {
		s.forget(proof.ID)
		s.kept[proof.ID] = lock.Keep(ctx(), pathlock.KeepOptions{})
	}
	s.reply(obj{{"keeping", err == nil}})
}

// kept ID: {"keeping","lost"}; unkeep ID: {"unkept"}, true when it was kept (or lost).
func (s *shell) keptOrUnkeep(cmd string, args []word) {
	if len(args) != 1 {
		s.fail(fmt.Errorf("usage: %s ID", cmd))
		return
	}
	if cmd == "unkeep" {
		s.reply(obj{{"unkept", s.forget(args[0].text)}})
		return
	}
	k, ok := s.kept[args[0].text]
	lost := ok && k.Err() != nil
	s.reply(obj{{"keeping", ok && !lost}, {"lost", lost}})
}

// forget stops keeping lock id; true when it was kept (or lost).
func (s *shell) forget(id string) bool {
	k, ok := s.kept[id]
	if ok {
		k.Stop()
		delete(s.kept, id)
	}
	return ok
}

// rowsOf: the JSON row of each item, in order (an empty list, never null).
func rowsOf[T any](items []T, row func(T) obj) []obj {
	out := make([]obj, 0, len(items))
	for _, x := range items {
		out = append(out, row(x))
	}
	return out
}

func targets(ts []pathlock.Target) obj {
	o := make(obj, 0, len(ts))
	for _, t := range ts {
		o = append(o, kv{t.Role, t.Path})
	}
	return o
}

func (s *shell) locks(args []word) {
	prefix, o, err := prefixed(args, []string{"limit", "after"}, "locks [PREFIX] [limit=N [after=CURSOR]]")
	_, hasLimit := o["limit"]
	_, hasAfter := o["after"]
	if err == nil && hasAfter && !hasLimit {
		err = errors.New("after= needs limit=")
	}
	if err != nil {
		s.fail(err)
		return
	}
	list, next, err := s.listLocks(prefix, o)
	if err != nil {
		s.fail(err)
		return
	}
	out := rowsOf(list, func(l pathlock.LockInfo) obj {
		return obj{{"id", l.ID}, {"owner", l.Owner}, {"op", l.Op}, {"targets", targets(l.Targets)},
			{"fence", l.Fence}, {"holds", l.Holds}, {"expires_in_ms", l.ExpiresIn.Milliseconds()}}
	})
	if hasLimit {
		s.reply(obj{{"locks", out}, {"next", next}})
	} else {
		s.reply(obj{{"locks", out}})
	}
}

// listLocks: every lock at or inside prefix, or with limit= one page of them
// and the next page's cursor (nil on the last page).
func (s *shell) listLocks(prefix string, o map[string]string) ([]pathlock.LockInfo, interface{}, error) {
	limit, paged := o["limit"]
	if !paged {
		list, err := s.c.ListAll(ctx(), s.ns, prefix)
		return list, nil, err
	}
	n, err := number("limit", limit, 1, 10000)
	if err != nil {
		return nil, nil, err
	}
	after, hasAfter := o["after"]
	if hasAfter && (after == "" || strings.Trim(after, "0123456789") != "") {
		return nil, nil, fmt.Errorf("after=%s is not a cursor", after)
	}
	p, err := s.c.List(ctx(), s.ns, prefix, int(n), after)
	if err != nil || p.Next == "" {
		return p.Locks, nil, err
	}
	return p.Locks, p.Next, nil
}

func (s *shell) blockers(args []word) {
	pos, o, err := parse(args, []string{"fair", "limit"})
	if err == nil && len(pos) < 2 {
		err = errors.New("blockers OP PATH [DST_PATH] [fair=true|false] [limit=N]")
	}
	if err != nil {
		s.fail(err)
		return
	}
	fair := true
	if v, ok := o["fair"]; ok {
		if fair, err = boolean("fair", v); err != nil {
			s.fail(err)
			return
		}
	}
	limit, err := rowLimit(o)
	if err != nil {
		s.fail(err)
		return
	}
	rows, truncated, err := s.c.Blockers(ctx(), s.ns, pos[0], pos[1:], int(limit))
	if err != nil {
		s.fail(err)
		return
	}
	out := make([]obj, 0, len(rows))
	for _, b := range rows {
		if b.Queued && !fair {
			continue // an unfair request ignores the line
		}
		kind := "lock"
		if b.Queued {
			kind = "waiter"
		}
		out = append(out, obj{{"kind", kind}, {"queued", b.Queued}, {"id", b.ID}, {"owner", b.Owner}, {"op", b.Op}, {"role", b.Role},
			{"path", b.Path}, {"requested_role", b.RequestedRole}, {"requested_path", b.RequestedPath},
			{"relation", string(b.Relation)}, {"fence", b.Fence}, {"holds", b.Holds},
			{"expires_in_ms", b.ExpiresIn.Milliseconds()}, {"waited_ms", b.Waited.Milliseconds()}})
	}
	s.reply(obj{{"blockers", out}, {"truncated", truncated}})
}

func (s *shell) waiters(args []word) {
	prefix, o, err := prefixed(args, []string{"limit"}, "waiters [PREFIX] [limit=N]")
	var limit int64
	if err == nil {
		limit, err = rowLimit(o)
	}
	if err != nil {
		s.fail(err)
		return
	}
	ws, err := s.c.Waiters(ctx(), s.ns, prefix, int(limit))
	if err != nil {
		s.fail(err)
		return
	}
	out := rowsOf(ws, func(w pathlock.Waiter) obj {
		return obj{{"id", w.ID}, {"owner", w.Owner}, {"op", w.Op}, {"targets", targets(w.Targets)},
			{"waited_ms", w.Waited.Milliseconds()}, {"expires_in_ms", w.ExpiresIn.Milliseconds()}}
	})
	s.reply(obj{{"waiters", out}})
}
