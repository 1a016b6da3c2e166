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
// docs/lua-protocol.md#deadlines): serverClock keeps, per server (per slot
// of a Cluster), a reading of the server's clock (TIME) against this
// process's monotonic clock, read again every 30 s and after a "late" reply.

import (
	"context"
	"errors"
	"strconv"
	"sync"
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

// clockRefresh: how long a reading of a server's clock is used.
const clockRefresh = 30 * time.Second

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

// serverClock: per server, the latest reading of its clock.
type serverClock struct {
	mu       sync.Mutex
	readings map[string]clockReading
}

type clockReading struct {
	serverMs int64     // the server's clock (ms since the epoch) ...
	at       time.Time // ... when the reply arrived (monotonic)
	noTime   bool      // TIME is not allowed: send no deadline
}

func (s *serverClock) get(key string) (clockReading, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.readings[key]
	if ok && time.Since(r.at) > clockRefresh {
		return r, false
	}
	return r, ok
}

func (s *serverClock) learn(key string, r clockReading) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readings == nil || len(s.readings) > 4096 {
		s.readings = map[string]clockReading{}
	}
	s.readings[key] = r
}

// deadlineArg: deadline_ms for a call sent now on conn whose caller waits
// budget for the reply; "" when the server's clock cannot be read (an ACL
// without TIME). It reads the clock (TIME) when it has no fresh reading.
func (s *serverClock) deadlineArg(conn redis.Conn, key string, budget time.Duration) (string, error) {
	r, ok := s.get(key)
	if !ok {
		v, err := redis.Int64s(doTimed(conn, budget, "TIME"))
		var re redis.Error
		switch {
		case errors.As(err, &re):
			r = clockReading{noTime: true, at: time.Now()}
		case err != nil:
			return "", err
		case len(v) != 2:
			return "", errors.New("TIME: unexpected reply")
		default:
			r = clockReading{serverMs: v[0]*1000 + v[1]/1000, at: time.Now()}
		}
		s.learn(key, r)
	}
	if r.noTime {
		return "", nil
	}
	at := r.serverMs + time.Since(r.at).Milliseconds() + budget.Milliseconds()
	return strconv.FormatInt(at, 10), nil
}
