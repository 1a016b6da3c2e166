package pathlock

import (
	"context"
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
	if limit < 1 || limit > 1000 {
		return nil, false, invalidf("limit must be 1 to 1000")
	}
	if op == "" || len(paths) == 0 {
		return nil, false, invalidf("an operation and its paths")
	}
	args := []string{op}
	for _, p := range paths {
		n, err := NormalizePath(p)
		if err != nil {
			return nil, false, err
		}
		args = append(args, n)
	}
	args = append(args, strconv.Itoa(limit))
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
