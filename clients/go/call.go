package pathlock

// One command on the wire under a context (issue 41).
//
// A call runs in its own goroutine, which owns the connection; the caller
// waits for the reply or for its context to end, whichever comes first, and
// in the second case returns at once (a *ContextError): so every call
// returns within its context's deadline plus DeadlineMargin, however long
// the server stalls. The read of an abandoned call is bounded by the same
// deadline (plus the margin), so its connection is dropped soon after; a
// reply that still arrives goes to the call's late handler (Acquire releases
// a grant there).
//
// Acquire also tells the server when its caller gives up (deadline_ms,
// docs/lua-protocol.md#deadlines), by the server's clock (clock.go).
//
// A call of a library function passes the keys and names the function as
// the library's contract says (contract.go).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// DeadlineMargin: a call returns at most this long after its context's
// deadline or cancellation. Most return within a few milliseconds (the time
// to schedule the waiting goroutine); a waiting Acquire spends up to the
// margin leaving the line (or releasing a grant that raced the
// cancellation), so that on a healthy server nothing of it is left when it
// returns. An abandoned read is given this much more time for a reply
// already on its way.
const DeadlineMargin = 250 * time.Millisecond

// ContextError is the error of a call whose context ended before its reply:
// errors.Is(err, context.DeadlineExceeded) or context.Canceled holds. Sent
// tells whether the command may have reached the server (then it may still
// run: an Acquire's grant is released when its reply comes, or it is refused
// as late by the server; a Release may have run, ask Held).
type ContextError struct {
	Op   string // the library function
	Sent bool
	Err  error // ctx.Err()
}

func (e *ContextError) Error() string {
	what := "nothing was sent"
	if e.Sent {
		what = "the call was sent and may have run"
	}
	return "pathlock: " + e.Op + ": " + e.Err.Error() + " (" + what + ")"
}

// Unwrap returns the context's error.
func (e *ContextError) Unwrap() error { return e.Err }

// readBudget: how long to wait for a reply under ctx (the shorter of ctx's
// time left and the client's ReadTimeout); <= 0 when ctx has ended.
func (c *Client) readBudget(ctx context.Context) time.Duration {
	budget := c.readTimeout
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); left < budget {
			budget = left
		}
	}
	if ctx.Err() != nil {
		return 0
	}
	return budget
}

type reply struct {
	v   interface{}
	err error
}

// exchange runs body on conn in a goroutine and waits for it while ctx
// lasts. It closes conn. late gets a reply that arrived after the caller
// left (nil: dropped).
func (c *Client) exchange(ctx context.Context, op string, conn redis.Conn, body func(redis.Conn) (interface{}, error),
	late func(interface{})) (interface{}, error) {
	if ctx.Done() == nil { // context.Background: nothing to watch
		defer conn.Close()
		return body(conn)
	}
	ch := make(chan reply, 1)
	go func() {
		v, err := body(conn)
		conn.Close()
		ch <- reply{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
	}
	select {
	case r := <-ch: // the reply came at the same moment: it counts
		return r.v, r.err
	default:
	}
	go func() {
		if r := <-ch; r.err == nil && late != nil {
			late(r.v)
		}
	}()
	return nil, &ContextError{Op: op, Sent: true, Err: ctx.Err()}
}

// doTimed sends one command and reads its reply for at most timeout (plus
// DeadlineMargin).
func doTimed(conn redis.Conn, timeout time.Duration, cmd string, args ...interface{}) (interface{}, error) {
	return redis.DoWithTimeout(conn, timeout+DeadlineMargin, cmd, args...)
}

// call runs one library function on the namespace's keys (call.go: the
// context is honoured while the call is on the wire). A call answered
// "Function not found" did not run: the library is loaded (when its text is
// known) and the call sent once more; so is one answered READONLY (a
// replica, after a failover). Nothing else is retried here.
func (c *Client) call(ctx context.Context, ns, fn string, args ...string) ([]interface{}, error) {
	return c.run(ctx, callSpec{cmd: "FCALL", ns: ns, fn: fn, args: args})
}

func (c *Client) callCmd(ctx context.Context, cmd, ns, fn string, args ...string) ([]interface{}, error) {
	return c.run(ctx, callSpec{cmd: cmd, ns: ns, fn: fn, args: args})
}

// callSpec is one call of a library function.
type callSpec struct {
	cmd, ns, fn string
	args        []string
	// deadlineAt: the index in args of acquire's deadline_ms, set per send
	// (0: none; acquire's is never its first argument, owner is).
	deadlineAt int
	// late gets a reply that arrived after the caller gave up.
	late func([]interface{})
}

func (c *Client) run(ctx context.Context, s callSpec) ([]interface{}, error) {
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed {
		return nil, ErrClosed
	}
	if err := CheckNamespace(s.ns); err != nil {
		return nil, err
	}
	a, err := c.fcallArgs(ctx, s)
	if err != nil {
		return nil, err
	}
	var late func(interface{})
	if s.late != nil {
		late = func(v interface{}) {
			if r, ok := v.([]interface{}); ok && len(r) > 0 {
				s.late(r)
			}
		}
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, &ContextError{Op: s.fn, Err: err}
		}
		conn, err := c.be.conn(ctx, s.ns)
		if err != nil {
			return nil, c.callError(ctx, s.fn, err)
		}
		v, err := c.exchange(ctx, s.fn, conn, c.sender(ctx, s, a), late)
		if attempt == 0 && (isFunctionNotFound(err) && c.code != "" || isReadOnly(err)) {
			if err := c.recover(ctx, s.ns, err); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, c.callError(ctx, s.fn, err)
		}
		return c.checkReply(s, v)
	}
}

// fcallArgs: the function, its keys (the contract's, contract.go) and its
// arguments.
func (c *Client) fcallArgs(ctx context.Context, s callSpec) ([]interface{}, error) {
	k, err := c.contract(ctx, s.ns)
	if err != nil {
		return nil, err
	}
	fn, err := k.function(s.fn)
	if err != nil {
		return nil, err
	}
	keys := k.keysOf(fn, s.ns)
	a := make([]interface{}, 0, 2+len(keys)+len(s.args))
	a = append(a, c.prefix+s.fn, len(keys))
	for _, key := range keys {
		a = append(a, key)
	}
	for _, arg := range s.args {
		a = append(a, arg)
	}
	return a, nil
}

// sender: the body of one send of the call, run by exchange. An acquire
// gets its deadline_ms here, and a "late" reply (the server's clock is ahead
// of the estimate; nothing ran) is sent once more with a corrected one.
func (c *Client) sender(ctx context.Context, s callSpec, a []interface{}) func(redis.Conn) (interface{}, error) {
	return func(conn redis.Conn) (interface{}, error) {
		budget := c.readBudget(ctx)
		if budget <= 0 {
			return nil, ctx.Err()
		}
		if s.deadlineAt == 0 {
			return doTimed(conn, budget, s.cmd, a...)
		}
		key := c.be.clockKey(s.ns)
		for tries := 0; ; tries++ {
			d, err := c.clock.deadlineArg(conn, key, budget)
			if err != nil {
				return nil, err
			}
			a[len(a)-len(s.args)+s.deadlineAt] = d
			v, err := doTimed(conn, budget, s.cmd, a...)
			r, _ := v.([]interface{})
			if err != nil || len(r) != 2 || str(r[0]) != "late" || tries == 1 {
				return v, err
			}
			c.clock.learn(key, clockReading{serverMs: num(r[1]), at: time.Now()})
			if budget = c.readBudget(ctx); budget <= 0 {
				return nil, ctx.Err()
			}
		}
	}
}

// recover makes a call answered "Function not found" or READONLY worth
// sending again: it loads the library, or looks for the new master.
func (c *Client) recover(ctx context.Context, ns string, cause error) error {
	if isReadOnly(cause) {
		c.be.broken()
		return nil
	}
	conn, err := c.be.conn(ctx, ns)
	if err != nil {
		return c.callError(ctx, "FUNCTION LOAD", err)
	}
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	_, err = c.exchange(ctx, "FUNCTION LOAD", conn, func(conn redis.Conn) (interface{}, error) {
		return nil, loadOn(conn, c.code)
	}, nil)
	if err != nil {
		return c.callError(ctx, "FUNCTION LOAD", err)
	}
	return nil
}

// callError translates a failed call: the context's end, an exhausted
// pool (nothing was sent), or a *BackendError.
func (c *Client) callError(ctx context.Context, fn string, err error) error {
	var ce *ContextError
	switch {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, redis.ErrPoolExhausted):
		return &BackendError{Op: fn, Err: fmt.Errorf("%w: all %d connections to the server (Options.MaxConns) are in use; nothing was sent",
			ErrPoolExhausted, c.maxConns)}
	case ctx.Err() != nil:
		return &ContextError{Op: fn, Sent: true, Err: ctx.Err()}
	}
	return &BackendError{Op: fn, Err: err}
}

// checkReply: a reply that is an array with a status; invalid and layout
// replies become errors, and so does a second "late".
func (c *Client) checkReply(s callSpec, v interface{}) ([]interface{}, error) {
	r, ok := v.([]interface{})
	if !ok || len(r) == 0 {
		return nil, &BackendError{Op: s.fn, Err: fmt.Errorf("unexpected reply %v", v)}
	}
	switch status(r[0]) {
	case "invalid":
		msg := "invalid"
		if len(r) > 1 {
			msg = str(r[1])
		}
		return nil, &InvalidError{Message: msg}
	case "layout":
		return nil, &BackendError{Op: s.fn, Err: fmt.Errorf("namespace %q was written with data layout %s; this library is layout %s",
			s.ns, at(r, 1), at(r, 2))}
	case "late":
		return nil, &BackendError{Op: s.fn, Err: errors.New("the call reached the server after this client's deadline twice " +
			"(its clock runs ahead of this host's estimate); nothing was changed (docs/lua-protocol.md#deadlines)")}
	}
	return r, nil
}

func isReadOnly(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(string(re), "READONLY")
}

func at(r []interface{}, i int) string {
	if i < len(r) {
		return str(r[i])
	}
	return ""
}

func status(v interface{}) string { return str(v) }

func str(v interface{}) string {
	switch t := v.(type) {
	case []byte:
		return string(t)
	case string:
		return t
	case int64:
		return fmt.Sprint(t)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func num(v interface{}) int64 {
	switch t := v.(type) {
	case int64:
		return t
	case []byte, string:
		var n int64
		fmt.Sscan(str(t), &n)
		return n
	}
	return 0
}

func unexpected(fn string, r []interface{}) error {
	return &BackendError{Op: fn, Err: fmt.Errorf("unexpected reply %q", status(r[0]))}
}
