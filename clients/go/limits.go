package pathlock

// Limits per namespace (protocol 4.3, docs/lua-protocol.md's contract:
// set_limits, limits_ro, acquire's default_limits and its over_limit reply).
// A namespace's own limits live in the library (set_limits); the default for
// every namespace is the plain string key pl:limits, which a Client reads at
// most every DefaultLimitsRefresh and sends with each Acquire, as the C++
// engine does (src/redis/limits.cpp).

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The default limits' key and how long a Client uses what it read of it
// (the contract's default_limits_key and default_limits_refresh_ms), and the
// largest value of a limit (limit_max).
const (
	DefaultLimitsKey     = "pl:limits"
	DefaultLimitsRefresh = 5 * time.Second
	MaxLimit             = 1000000000
)

// ErrOverLimit: a limit of the namespace (or of the owner in it) refused
// the request; nothing was taken and no place in line kept. The error is an
// *OverLimitError.
var ErrOverLimit = errors.New("pathlock: over a limit of the namespace")

// LimitKind names the limit that refused a request.
type LimitKind string

// The limits a namespace can have.
const (
	LimitLocks      LimitKind = "locks"       // live locks in the namespace
	LimitPlaces     LimitKind = "places"      // places in line (fair waiting requests)
	LimitOwnerLocks LimitKind = "owner_locks" // live locks of one owner
)

// OverLimitError is the error of an Acquire refused by a limit: Limit names
// it, Max is the limit in force and Count what the namespace (or the owner)
// has now, at least Max. A waiting Acquire gets it at once: a limit is not a
// lock that ends.
type OverLimitError struct {
	Limit LimitKind
	Max   int64
	Count int64
}

func (e *OverLimitError) Error() string {
	return fmt.Sprintf("pathlock: over the limit on %s: %d of at most %d", e.Limit, e.Count, e.Max)
}

// Is makes errors.Is(err, ErrOverLimit) true.
func (e *OverLimitError) Is(target error) bool { return target == ErrOverLimit }

// Limits are the most live locks, places in line and locks per owner a
// namespace may have; nil: no such limit. Only live data counts: a lock
// whose lease ended, or a place whose reservation ended, no longer does.
type Limits struct {
	Locks      *int64
	Places     *int64
	OwnerLocks *int64
}

// Limit is a limit's value for Limits: Limits{Locks: pathlock.Limit(100)}.
func Limit(n int64) *int64 { return &n }

// None: no limit at all.
func (l Limits) None() bool { return l.Locks == nil && l.Places == nil && l.OwnerLocks == nil }

// String is the text form the library reads: "LOCKS PLACES OWNER_LOCKS",
// each decimal digits or "-" for none.
func (l Limits) String() string {
	words := make([]string, 3)
	for i, v := range []*int64{l.Locks, l.Places, l.OwnerLocks} {
		words[i] = "-"
		if v != nil {
			words[i] = strconv.FormatInt(*v, 10)
		}
	}
	return strings.Join(words, " ")
}

// check: every limit 0..MaxLimit (ErrInvalid).
func (l Limits) check() error {
	for _, v := range []*int64{l.Locks, l.Places, l.OwnerLocks} {
		if v != nil && (*v < 0 || *v > MaxLimit) {
			return invalidf("a limit must be 0 to %d, got %d", MaxLimit, *v)
		}
	}
	return nil
}

// ParseLimits reads the text form ("3 - -"); ErrInvalid when it is not one.
func ParseLimits(text string) (Limits, error) {
	var l Limits
	words := strings.Split(text, " ")
	if len(words) != 3 {
		return l, invalidf("limits %q: \"LOCKS PLACES OWNER_LOCKS\", each digits or -", text)
	}
	for i, into := range []**int64{&l.Locks, &l.Places, &l.OwnerLocks} {
		if words[i] == "-" {
			continue
		}
		if words[i] == "" || len(words[i]) > 10 || strings.Trim(words[i], "0123456789") != "" {
			return Limits{}, invalidf("limits %q: %q is neither digits nor -", text, words[i])
		}
		n, _ := strconv.ParseInt(words[i], 10, 64)
		*into = Limit(n)
	}
	return l, l.check()
}

// LimitsStatus is a namespace's limits and its use of them (Client.Limits).
type LimitsStatus struct {
	Default   Limits  // the default for every namespace (pl:limits)
	Own       *Limits // the namespace's own, replacing the default whole; nil: none
	Effective Limits  // what is enforced: Own, else Default
	Locks     int64   // live locks now
	Places    int64   // places in line now
	// OwnerLocks: the live locks of the owner that has the most, Owner
	// ("" when no lock is held; on a tie the first by name).
	OwnerLocks int64
	Owner      string
}

// SetLimits gives namespace ns limits of its own, which replace the
// default whole at once, for every client; nil takes them away (the
// default applies again). A namespace with limits of its own keeps its keys
// (they do not expire while it is idle).
func (c *Client) SetLimits(ctx context.Context, ns string, l *Limits) error {
	text := ""
	if l != nil {
		if err := l.check(); err != nil {
			return err
		}
		text = l.String()
	}
	r, err := c.call(ctx, ns, "set_limits", text)
	if err == nil && status(r[0]) != "limits" {
		err = unexpected("set_limits", r)
	}
	return err
}

// Limits answers the limits in force in namespace ns and its use of them
// (read-only; the default is read from the server, not the cache).
func (c *Client) Limits(ctx context.Context, ns string) (LimitsStatus, error) {
	var s LimitsStatus
	r, err := c.callCmd(ctx, "FCALL_RO", ns, "limits_ro")
	if err != nil {
		return s, err
	}
	if status(r[0]) != "limits" || len(r) < 6 {
		return s, unexpected("limits_ro", r)
	}
	if own := str(r[1]); own != "" {
		l, err := ParseLimits(own)
		if err != nil {
			return s, &BackendError{Op: "limits_ro", Err: err}
		}
		s.Own = &l
	}
	text, err := c.defaults.get(ctx, c, true)
	if err != nil {
		return s, err
	}
	s.Default, _ = ParseLimits(text) // "" (none) fails to parse: no limit
	s.Effective = s.Default
	if s.Own != nil {
		s.Effective = *s.Own
	}
	s.Locks, s.Places, s.OwnerLocks, s.Owner = num(r[2]), num(r[3]), num(r[4]), str(r[5])
	return s, nil
}

// SetDefaultLimits sets the default limits of every namespace without its
// own (SET pl:limits; none at all: DEL). Every client learns them within
// DefaultLimitsRefresh; this one at once.
func (c *Client) SetDefaultLimits(ctx context.Context, l Limits) error {
	if err := l.check(); err != nil {
		return err
	}
	text := ""
	args := []interface{}{DefaultLimitsKey}
	cmd := "DEL"
	if !l.None() {
		text = l.String()
		cmd, args = "SET", append(args, text)
	}
	if _, err := c.keyCommand(ctx, DefaultLimitsKey, cmd, args...); err != nil {
		return err
	}
	c.defaults.set(text)
	return nil
}

// keyCommand runs one command on the server of key's slot, under ctx.
func (c *Client) keyCommand(ctx context.Context, key, cmd string, args ...interface{}) (interface{}, error) {
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed {
		return nil, ErrClosed
	}
	conn, err := c.be.keyConn(ctx, key)
	if err != nil {
		return nil, c.callError(ctx, cmd+" "+key, err)
	}
	v, err := c.exchange(ctx, cmd+" "+key, conn, func(conn redis.Conn) (interface{}, error) {
		return doTimed(conn, c.readBudget(ctx), cmd, args...)
	}, nil)
	if err != nil {
		return nil, c.callError(ctx, cmd+" "+key, err)
	}
	return v, nil
}

// defaultLimits: pl:limits as this client last read it. Safe for
// concurrent use: one read at a time, which the others wait for (or for
// their contexts).
type defaultLimits struct {
	mu          sync.Mutex
	text        string
	readAt      time.Time
	read        bool
	warned      bool
	unreachable bool          // the last read failed on the network (told once per such stretch)
	reading     chan struct{} // closed when the read under way ends; nil: none
	warn        func(string)  // Options.Warn
}

// get: the text to send with an acquire ("" when none), read from the
// server when older than DefaultLimitsRefresh (or fresh). An error reply
// (NOPERM: the user may not GET pl:limits) counts as none, with one warning;
// a value this client cannot read (another tool's) counts as none too.
func (d *defaultLimits) get(ctx context.Context, c *Client, fresh bool) (string, error) {
	for {
		d.mu.Lock()
		if d.read && !fresh && time.Since(d.readAt) < DefaultLimitsRefresh {
			text := d.text
			d.mu.Unlock()
			return text, nil
		}
		if ch := d.reading; ch != nil {
			d.mu.Unlock()
			select {
			case <-ch:
				fresh = false // that read is fresh enough
				continue
			case <-ctx.Done():
				return "", &ContextError{Op: "GET " + DefaultLimitsKey, Err: ctx.Err()}
			}
		}
		ch := make(chan struct{})
		d.reading = ch
		d.mu.Unlock()
		text, err := d.fetch(ctx, c)
		d.mu.Lock()
		d.reading = nil
		close(ch)
		d.mu.Unlock()
		return text, err
	}
}

// fetch reads the key (GET) and keeps what it found. A GET whose reply was
// lost is sent again (it changes nothing), twice at most, while ctx lasts.
func (d *defaultLimits) fetch(ctx context.Context, c *Client) (string, error) {
	v, err := c.keyCommand(ctx, DefaultLimitsKey, "GET", DefaultLimitsKey)
	for tries := 1; err != nil && tries <= 2 && lostReply(err) && ctx.Err() == nil; tries++ {
		v, err = c.keyCommand(ctx, DefaultLimitsKey, "GET", DefaultLimitsKey)
	}
	var re redis.Error
	var be *BackendError
	refused := errors.As(err, &be) && errors.As(err, &re)
	if err != nil && !refused {
		if ctx.Err() != nil {
			return "", err
		}
		// The key's node cannot be reached (a Cluster node down or cut off,
		// which the namespace's need not be): the last text read stays, read
		// again after DefaultLimitsRefresh; the acquire goes on (a limit
		// protects memory, not a lock), as in every pathlock client.
		d.mu.Lock()
		defer d.mu.Unlock()
		d.readAt, d.read = time.Now(), true
		if !d.unreachable {
			d.unreachable = true
			d.warnf("pathlock: could not read the default limits (%s): %v; the last default read stays",
				DefaultLimitsKey, err)
		}
		return d.text, nil
	}
	text := ""
	if b, ok := v.([]byte); ok {
		if _, perr := ParseLimits(string(b)); perr == nil {
			text = string(b)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.text, d.readAt, d.read, d.unreachable = text, time.Now(), true, false
	if refused && !d.warned {
		// Kept as none for DefaultLimitsRefresh: the user is told once.
		d.warned = true
		d.warnf("pathlock: this user may not GET %s (%v); no default limits apply to its requests. "+
			"Grant +get on ~pl:*", DefaultLimitsKey, re)
	}
	return text, nil
}

// warnf: one warning through Options.Warn (default log.Print). Called with d.mu held.
func (d *defaultLimits) warnf(format string, args ...any) {
	warn := d.warn
	if warn == nil {
		warn = func(s string) { log.Print(s) }
	}
	warn(fmt.Sprintf(format, args...))
}

// set: the text this client wrote (SetDefaultLimits).
func (d *defaultLimits) set(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.text, d.readAt, d.read = text, time.Now(), true
}
