package pathlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Defaults and limits of requests.
const (
	DefaultTTL = 30 * time.Second
	MaxTTL     = 7 * 24 * time.Hour
	// Recheck: a waiting request looks again at least this often. A wait
	// uses the library's number (its contract's waiting.recheck_ms,
	// protocol 4.4), which the bundled library sets to this; this is the
	// number of a library older than 4.4.
	Recheck = 200 * time.Millisecond
	// MaxReservation: the longest place in line one attempt keeps: the
	// library's waiting.max_reservation_ms, as Recheck.
	MaxReservation = 2 * time.Second
)

// Proof names a lock to re-enter: the ID and Token of its grant.
type Proof struct {
	ID    string
	Token string
}

// Request asks for a lock.
type Request struct {
	Namespace string
	// Owner: who asks, never a proof of anything: 1..256 bytes of
	// well-formed UTF-8 without control characters (CheckOwner).
	Owner string
	Op    string // an operation of the library's matrix, e.g. "upload"
	// Paths: one per role of Op, in the matrix's role order (for a move or
	// copy src then dst). They are normalised (NormalizePath).
	Paths []string
	// TTL: the lease (default 30 s, at most one week).
	TTL time.Duration
	// Wait: how long a refused request waits (0: answer at once).
	Wait time.Duration
	// Unfair opts out of fairness: the request may overtake older waiting
	// requests and waits without a place in line.
	Unfair bool
	// Reenter takes a lock held already once more (holds+1): the same Op and
	// Paths, with the proof of its grant. A reentry never waits.
	Reenter Proof
	// IdempotencyKey (1..128 of [A-Za-z0-9._:-]) makes a retry of an
	// Acquire whose reply was lost safe: the same key, owner, op and paths
	// get the same lock back. Not with Reenter.
	IdempotencyKey string
}

var keyRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("pathlock: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

func ms(d time.Duration) string { return strconv.FormatInt(int64(d/time.Millisecond), 10) }

func millis(v interface{}) time.Duration { return time.Duration(num(v)) * time.Millisecond }

// Acquire asks for a lock. It returns the Lock, or an error: a
// *RefusedError (errors.Is ErrRefused) when a conflict remains at the end of
// Wait, ErrNotHolder for a reentry whose proof names no live lock, an
// *OverLimitError (errors.Is ErrOverLimit) when a limit of the namespace
// refuses it (at once, even when it would wait), *InvalidError,
// *BackendError, or the context's error when ctx ends first (then the
// request has left the line and nothing is held).
func (c *Client) Acquire(ctx context.Context, req Request) (*Lock, error) {
	paths, err := req.check()
	if err != nil {
		return nil, err
	}
	return c.send(ctx, "acquire", &req, paths, WireIDs{ID: randomHex(12), Token: randomHex(16), Waiter: "w" + randomHex(12)})
}

// send runs req (checked: paths are its paths normalised) as calls of the
// library's fn, acquire or convert: one attempt, or the wait loop.
func (c *Client) send(ctx context.Context, fn string, req *Request, paths []string, ids WireIDs) (*Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, err := c.prepare(ctx, fn, req, paths, ids)
	if err != nil {
		return nil, err
	}
	if !w.waits {
		l, _, err := w.attempt(ctx, 0)
		return l, err
	}
	return w.run(ctx)
}

// prepare builds the call of fn (acquire, or convert: the same arguments,
// docs/lua-protocol.md#convert) for req (checked: paths are its paths
// normalised) from the library's contract: every argument by its name
// (contract.go), reserve_ms "0" and deadline_ms "" (set per attempt, per
// send), and the default limits (limits.go), read once per call. ids are
// the new lock's (empty for a conversion) and the waiter's (its id is sent
// only by a request that takes a place in line).
func (c *Client) prepare(ctx context.Context, fn string, req *Request, paths []string, ids WireIDs) (*waiting, error) {
	if req.TTL == 0 {
		req.TTL = DefaultTTL
	}
	k, err := c.contract(ctx, req.Namespace)
	if err != nil {
		return nil, err
	}
	f, err := k.function(fn)
	if err != nil {
		return nil, err
	}
	w := &waiting{c: c, fn: fn, req: req, paths: paths, k: k, numbers: k.waiting}
	// A reentry never waits; a conversion, which names its lock by the same
	// proof, does.
	w.waits = req.Wait > 0 && (w.converts() || req.Reenter == (Proof{}))
	fair := "1"
	if req.Unfair {
		fair = "0"
	}
	if w.waits && !req.Unfair {
		w.waiter = ids.Waiter
	}
	defaults, err := c.defaults.get(ctx, c, false)
	if err != nil {
		return nil, err
	}
	values := map[string]string{"owner": req.Owner, "op": req.Op, "ttl_ms": ms(req.TTL), "new_id": ids.ID,
		"new_token": ids.Token, "reenter_id": req.Reenter.ID, "reenter_token": req.Reenter.Token,
		"idempotency_key": req.IdempotencyKey, "fair": fair, "waiter_id": w.waiter, "reserve_ms": "0",
		"deadline_ms": "", "default_limits": defaults}
	args, at, err := f.arguments(values, paths)
	if err != nil {
		return nil, err
	}
	w.args = args
	w.reserveAt, w.deadlineAt = -1, at["deadline_ms"] // 0 (none) when absent: owner is first
	if i, ok := at["reserve_ms"]; ok {
		w.reserveAt = i
	}
	return w, nil
}

// check applies the engine's input rules (input.go) to the request and
// returns its paths, normalised.
func (req *Request) check() ([]string, error) {
	if err := CheckNamespace(req.Namespace); err != nil {
		return nil, err
	}
	if err := CheckOwner(req.Owner); err != nil {
		return nil, err
	}
	paths, err := req.checkCall()
	if err != nil {
		return nil, err
	}
	reentry := req.Reenter != (Proof{})
	if reentry {
		if err := checkProof(req.Reenter); err != nil {
			return nil, err
		}
	}
	if req.IdempotencyKey != "" && reentry {
		return nil, invalidf("an idempotency key and a reentry exclude each other")
	}
	return paths, checkKey(req.IdempotencyKey)
}

// checkConversion: check's rules for a conversion, which has no owner of
// its own (the lock keeps its owner) and always a proof, which an
// idempotency key may go with.
func (req *Request) checkConversion() ([]string, error) {
	if err := CheckNamespace(req.Namespace); err != nil {
		return nil, err
	}
	paths, err := req.checkCall()
	if err != nil {
		return nil, err
	}
	if err := checkProof(req.Reenter); err != nil {
		return nil, err
	}
	return paths, checkKey(req.IdempotencyKey)
}

// checkCall: the rules an acquire and a conversion share: an operation,
// paths (returned normalised), the TTL and the wait.
func (req *Request) checkCall() ([]string, error) {
	switch {
	case req.Op == "":
		return nil, invalidf("no operation")
	case len(req.Paths) == 0:
		return nil, invalidf("no path")
	case req.TTL != 0 && (req.TTL < time.Millisecond || req.TTL > MaxTTL):
		return nil, invalidf("ttl must be 1 ms to one week")
	case req.Wait < 0:
		return nil, invalidf("negative wait")
	}
	paths := make([]string, len(req.Paths))
	for i, p := range req.Paths {
		n, err := NormalizePath(p)
		if err != nil {
			return nil, err
		}
		paths[i] = n
	}
	return paths, nil
}

// checkKey: an idempotency key is empty or 1..128 of [A-Za-z0-9._:-].
func checkKey(key string) error {
	if key != "" && !keyRE.MatchString(key) {
		return invalidf("idempotency key: 1 to 128 of A-Z a-z 0-9 . _ : -")
	}
	return nil
}

// waiting is one Acquire's or Convert's call and wait loop
// (docs/lua-protocol.md "Waiting and the line").
type waiting struct {
	c       *Client
	fn      string // the library function each attempt calls: acquire or convert
	req     *Request
	paths   []string
	k       *contract
	numbers waitNumbers // the contract's waiting
	args    []string
	waits   bool   // Wait > 0 and no reentry
	waiter  string // the place in line's id; "": none (unfair, or no wait)
	sub     *subscription
	// reserveAt, deadlineAt: the indexes in args of reserve_ms (-1: none)
	// and deadline_ms (0: none), found by name in the contract.
	reserveAt, deadlineAt int
}

// converts: the call is a conversion of a held lock (Convert).
func (w *waiting) converts() bool { return w.fn == "convert" }

// setReserve sets the next attempt's reserve_ms.
func (w *waiting) setReserve(reserve time.Duration) {
	if w.reserveAt >= 0 {
		w.args[w.reserveAt] = ms(reserve)
	}
}

// attempt is one call of acquire (or convert), honouring ctx in flight: it
// carries the caller's deadline (deadline_ms: a call the server runs later
// grants nothing), and an acquire's grant whose reply arrives after the
// caller gave up is released (a conversion's stays made: see Convert). An
// attempt with an IdempotencyKey whose reply was lost (the connection
// failed, the read timed out) is sent again, twice at most, while ctx
// lasts: the server answers with the lock the lost one made, if it ran.
func (w *waiting) attempt(ctx context.Context, reserve time.Duration) (*Lock, *Conflict, error) {
	w.setReserve(reserve)
	spec := callSpec{cmd: "FCALL", ns: w.req.Namespace, fn: w.fn, args: w.args, deadlineAt: w.deadlineAt}
	if !w.converts() {
		spec.late = w.c.releaseGrant(w.req.Namespace)
	}
	r, err := w.c.run(ctx, spec)
	for tries := 1; err != nil && w.req.IdempotencyKey != "" && tries <= 2 && lostReply(err); tries++ {
		r, err = w.c.run(ctx, spec)
	}
	if err != nil {
		return nil, nil, err
	}
	switch st := status(r[0]); st {
	case "granted":
		if len(r) < 6 {
			return nil, nil, unexpected(w.fn, r)
		}
		return &Lock{c: w.c, ns: w.req.Namespace, id: str(r[1]), token: str(r[2]), fence: uint64(num(r[3])),
			expiresIn: millis(r[4]), holds: int(num(r[5])), ttl: w.req.TTL}, nil, nil
	case "refused", "would_deadlock":
		if len(r) < 11 {
			return nil, nil, unexpected(w.fn, r)
		}
		cf := Conflict{ID: str(r[1]), Op: str(r[2]), Role: str(r[3]), Path: str(r[4]), Owner: str(r[5]),
			ExpiresIn: millis(r[6]), RequestedRole: str(r[7]), RequestedPath: str(r[8]),
			Relation: Relation(str(r[9])), Queued: num(r[10]) != 0}
		return nil, &cf, &RefusedError{Conflict: cf, WouldDeadlock: st == "would_deadlock"}
	case "not_holder":
		return nil, nil, ErrNotHolder
	case "over_limit":
		if len(r) < 4 {
			return nil, nil, unexpected(w.fn, r)
		}
		return nil, nil, &OverLimitError{Limit: LimitKind(str(r[1])), Max: num(r[2]), Count: num(r[3])}
	}
	return nil, nil, unexpected(w.fn, r)
}

// lostReply: the call may have run but its reply did not come (a broken
// connection, a read timeout), while the caller still waits. Errors Redis
// answered, an exhausted pool and the context's end are not lost replies.
func lostReply(err error) bool {
	var be *BackendError
	var re redis.Error
	return errors.As(err, &be) && !errors.As(err, &re) && !errors.Is(err, ErrPoolExhausted)
}

// releaseGrant: for an acquire reply that came after its caller gave up
// (or a grant that raced a cancellation): a grant is released, in the
// background, never dropped.
func (c *Client) releaseGrant(ns string) func([]interface{}) {
	return func(r []interface{}) {
		if status(r[0]) != "granted" || len(r) < 3 {
			return
		}
		go func() {
			ctx, cancel := cleanup()
			defer cancel()
			_, _ = c.Release(ctx, ns, str(r[1]), str(r[2]))
		}()
	}
}

// recheckEvery: the longest sleep between two attempts (the contract's
// recheck_ms, unless a test set another).
func (w *waiting) recheckEvery() time.Duration {
	if w.c.recheck > 0 {
		return w.c.recheck
	}
	return w.numbers.Recheck
}

// cleanup: a context for the calls that end a wait, whatever ctx says.
func cleanup() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// leave takes the request's place out of the line before Acquire returns,
// unless the server stalls: see tidy.
func (w *waiting) leave() {
	if w.waiter == "" {
		return
	}
	w.c.tidy(true, func(ctx context.Context) error {
		_, err := w.c.call(ctx, w.req.Namespace, "leave", w.waiter)
		return err
	})
}

// tidy runs a clean-up call (leave, release) for at most DeadlineMargin: a
// healthy server has done it when the caller returns, and a caller whose
// context ended does not wait for a stalled one. A call cut off is sent
// again in the background when again (leave) or when it was not sent; else
// a place left behind ends with its reservation (MaxReservation at most).
func (c *Client) tidy(again bool, call func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), DeadlineMargin)
	err := call(ctx)
	cancel()
	var ce *ContextError
	if !errors.As(err, &ce) || ce.Sent && !again {
		return
	}
	go func() {
		ctx, cancel := cleanup()
		defer cancel()
		_ = call(ctx)
	}()
}

func (w *waiting) run(ctx context.Context) (*Lock, error) {
	deadline := time.Now().Add(w.req.Wait)
	defer func() {
		if w.sub != nil {
			w.sub.close()
		}
	}()
	for {
		left := time.Until(deadline)
		last := left <= 0
		lock, conflict, err := w.attempt(ctx, w.numbers.reserve(left, w.waiter != ""))
		if h := w.c.afterAttempt; h != nil {
			h(lock != nil)
		}
		if lock != nil {
			if ctx.Err() != nil && !w.converts() {
				// The grant raced the cancellation: release it, never drop it.
				// (A conversion made stays made and is returned: the lock's
				// old operation may no longer fit beside what came since.)
				w.c.tidy(false, func(ctx context.Context) error {
					_, err := w.c.Release(ctx, lock.ns, lock.id, lock.token)
					return err
				})
				return nil, ctx.Err()
			}
			return lock, nil
		}
		if errors.Is(err, ErrOverLimit) || errors.Is(err, ErrWouldDeadlock) {
			return nil, err // at once; the library took the place out of the line
		}
		if conflict == nil { // an error, or not_holder (a converted lock gone meanwhile; no reentry waits)
			w.leave()
			return nil, err
		}
		if last {
			return nil, err // a refusal with reserve 0 removed the place
		}
		if err := w.pause(ctx, deadline, conflict); err != nil {
			w.leave()
			return nil, err
		}
	}
}

// pause: between two attempts of a wait, until a wake-up message, the next
// re-check, the conflict's expiry or the end of the wait; ctx's error when
// it ends first. The first pause subscribes and returns at once (a release
// before SSUBSCRIBE would be missed), and so does one after the
// subscription's connection broke.
func (w *waiting) pause(ctx context.Context, deadline time.Time, conflict *Conflict) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if w.sub == nil || w.sub.broken() {
		w.sub = w.c.subscribe(ctx, w.req.Namespace, w.k.key(w.req.Namespace, "wake"), w.paths)
		return nil
	}
	sleep := time.Until(deadline)
	if recheck := w.recheckEvery(); sleep > recheck {
		sleep = recheck
	}
	if e := conflict.ExpiresIn + w.numbers.WakeMargin; sleep > e {
		sleep = e
	}
	if sleep < 0 {
		sleep = 0
	}
	t := time.NewTimer(sleep)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.sub.wake:
	case <-t.C:
	}
	return nil
}
