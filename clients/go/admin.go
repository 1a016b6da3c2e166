package pathlock

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Target is one role's path.
type Target struct {
	Role string
	Path string
}

// LockInfo is a live lock as List shows it.
type LockInfo struct {
	ID        string
	Owner     string
	Op        string
	Targets   []Target // in role order
	Fence     uint64
	Holds     int
	ExpiresIn time.Duration
}

// Page is one page of List.
type Page struct {
	Locks []LockInfo
	// Next: pass it as after for the next page; "" on the last page.
	Next string
}

// List returns one page of the live locks with a target at or inside prefix
// ("/" for all), ordered by fence, of at most limit (1..10000) locks, from
// after ("" to start). A page may hold fewer than limit locks and still have
// a Next.
func (c *Client) List(ctx context.Context, ns, prefix string, limit int, after string) (Page, error) {
	var p Page
	prefix, err := NormalizePath(prefix)
	if err != nil {
		return p, err
	}
	if limit < 1 || limit > 10000 {
		return p, invalidf("limit must be 1 to 10000")
	}
	r, err := c.call(ctx, ns, "list", prefix, strconv.Itoa(limit), after)
	if err != nil {
		return p, err
	}
	if status(r[0]) != "locks" || len(r) < 2 {
		return p, unexpected("list", r)
	}
	p.Next = str(r[1])
	for _, e := range r[2:] {
		f, _ := e.([]interface{})
		if len(f) < 7 {
			return p, unexpected("list", r)
		}
		li := LockInfo{ID: str(f[0]), Owner: str(f[1]), Op: str(f[2]), Fence: uint64(num(f[3])),
			Holds: int(num(f[4])), ExpiresIn: millis(f[5]), Targets: targets(f[6])}
		p.Locks = append(p.Locks, li)
	}
	return p, nil
}

// ListAll walks every page of List.
func (c *Client) ListAll(ctx context.Context, ns, prefix string) ([]LockInfo, error) {
	var out []LockInfo
	after := ""
	for {
		p, err := c.List(ctx, ns, prefix, 10000, after)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Locks...)
		if p.Next == "" {
			return out, nil
		}
		after = p.Next
	}
}

func targets(v interface{}) []Target {
	f, _ := v.([]interface{})
	out := make([]Target, 0, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		out = append(out, Target{Role: str(f[i]), Path: str(f[i+1])})
	}
	return out
}

// Blocker is a held lock or a place in line that refuses a request now.
type Blocker struct {
	Queued        bool // a place in line (then ID is the waiter's id)
	ID            string
	Owner         string
	Op            string
	Role          string // the blocker's role and path
	Path          string
	RequestedRole string
	RequestedPath string
	Relation      Relation
	Fence         uint64 // 0 for a place in line
	Holds         int
	ExpiresIn     time.Duration // lease, or reservation, left
	Waited        time.Duration // since the place was taken (locks: 0)
}

// Blockers answers why a request for op on these paths would be refused
// now: every held lock and place in line that refuses it (read-only), at
// most limit (1..1000) rows; truncated when there are more.
func (c *Client) Blockers(ctx context.Context, ns, op string, paths []string, limit int) (rows []Blocker, truncated bool, err error) {
	return c.blockers(ctx, ns, op, paths, limit, nil)
}

// ConversionBlockers is the dry run of a conversion (since 1.1.0; protocol
// 4.6): why would Convert of lock id to conv's operation and paths be
// refused now? Blockers, judged as the conversion is judged: never the lock
// itself, nor its own place in line, nor a place in line that the lock as
// it is now refuses (the conversion goes before those); with conv.Unfair,
// held locks only (the limit then counts them only). conv's TTL, Wait and
// IdempotencyKey play no part. No token is needed; an id that names no
// live lock leaves nothing out (Blockers' answer). Read-only. ErrInvalid
// for an id that is not 1..64 of [A-Za-z0-9-]; ErrBackend from a library
// older than protocol 4.6, which has no dry run of a conversion.
func (c *Client) ConversionBlockers(ctx context.Context, ns, id string, conv Conversion, limit int) (rows []Blocker, truncated bool, err error) {
	if !lockIDRE.MatchString(id) {
		return nil, false, invalidf("the converted lock's id must be 1..%d characters of [A-Za-z0-9-]", MaxIDChars)
	}
	fair := "1"
	if conv.Unfair {
		fair = "0"
	}
	return c.blockers(ctx, ns, conv.Op, conv.Paths, limit, map[string]string{"converts": id, "fair": fair})
}

// blockers calls the library's blockers with its arguments by name
// (contract.go): op, the paths, limit, and the optional group that
// optional holds (converts and fair; nil: none).
func (c *Client) blockers(ctx context.Context, ns, op string, paths []string, limit int, optional map[string]string) (rows []Blocker, truncated bool, err error) {
	args, err := c.blockersArgs(ctx, ns, op, paths, limit, optional)
	if err != nil {
		return nil, false, err
	}
	r, err := c.callCmd(ctx, "FCALL_RO", ns, "blockers", args...)
	if err != nil {
		return nil, false, err
	}
	if status(r[0]) != "blockers" || len(r) < 2 {
		return nil, false, unexpected("blockers", r)
	}
	for _, e := range r[2:] {
		f, _ := e.([]interface{})
		if len(f) < 13 {
			return nil, false, unexpected("blockers", r)
		}
		rows = append(rows, Blocker{Queued: num(f[0]) != 0, ID: str(f[1]), Owner: str(f[2]), Op: str(f[3]),
			Role: str(f[4]), Path: str(f[5]), RequestedRole: str(f[6]), RequestedPath: str(f[7]),
			Relation: Relation(str(f[8])), Fence: uint64(num(f[9])), Holds: int(num(f[10])),
			ExpiresIn: millis(f[11]), Waited: millis(f[12])})
	}
	return rows, num(r[1]) != 0, nil
}

// blockersArgs checks blockers' input and builds its arguments from the
// library's contract; every name of optional must be sent (a library
// without them is older than protocol 4.6: ErrBackend, nothing sent).
func (c *Client) blockersArgs(ctx context.Context, ns, op string, paths []string, limit int, optional map[string]string) ([]string, error) {
	if limit < 1 || limit > 1000 {
		return nil, invalidf("limit must be 1 to 1000")
	}
	if op == "" || len(paths) == 0 {
		return nil, invalidf("an operation and its paths")
	}
	normal := make([]string, len(paths))
	for i, p := range paths {
		n, err := NormalizePath(p)
		if err != nil {
			return nil, err
		}
		normal[i] = n
	}
	if err := CheckNamespace(ns); err != nil {
		return nil, err
	}
	c.closeMu.RLock()
	closed := c.closed
	c.closeMu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	k, err := c.contract(ctx, ns)
	if err != nil {
		return nil, err
	}
	fn, err := k.function("blockers")
	if err != nil {
		return nil, err
	}
	values := map[string]string{"op": op, "limit": strconv.Itoa(limit)}
	for name, v := range optional {
		values[name] = v
	}
	args, at, err := fn.arguments(values, normal)
	if err != nil {
		return nil, err
	}
	for name := range optional {
		if _, ok := at[name]; !ok {
			return nil, &BackendError{Op: "blockers", Err: fmt.Errorf("the library (protocol %s) takes no %q: "+
				"the dry run of a conversion needs protocol 4.6 or later", k.Protocol, name)}
		}
	}
	return args, nil
}

// Waiter is a place in line.
type Waiter struct {
	ID        string
	Owner     string
	Op        string
	Targets   []Target
	Waited    time.Duration
	ExpiresIn time.Duration // what is left of its reservation
	// Converts: the id of the lock a waiting conversion converts; "" for a
	// waiting acquire (and from a library older than protocol 4.5).
	Converts string
}

// Waiters lists the places in line with a path at or inside prefix, oldest
// first, at most limit (1..1000). Read-only.
func (c *Client) Waiters(ctx context.Context, ns, prefix string, limit int) ([]Waiter, error) {
	prefix, err := NormalizePath(prefix)
	if err != nil {
		return nil, err
	}
	if limit < 1 || limit > 1000 {
		return nil, invalidf("limit must be 1 to 1000")
	}
	r, err := c.callCmd(ctx, "FCALL_RO", ns, "waiters", prefix, strconv.Itoa(limit))
	if err != nil {
		return nil, err
	}
	if status(r[0]) != "waiters" {
		return nil, unexpected("waiters", r)
	}
	var out []Waiter
	for _, e := range r[1:] {
		f, _ := e.([]interface{})
		if len(f) < 6 {
			return nil, unexpected("waiters", r)
		}
		out = append(out, Waiter{ID: str(f[0]), Owner: str(f[1]), Op: str(f[2]), Waited: millis(f[3]),
			ExpiresIn: millis(f[4]), Targets: targets(f[5]), Converts: at(f, 6)})
	}
	return out, nil
}
