package pathlock

// The library's contract (protocol 4.2, docs/lua-protocol.md#contract-read-only):
// what the library says about itself through its read-only function
// `contract`, read once per Client (from the first call's server) and kept.
// The client takes from it the keys of every call (keys.pattern and
// keys.suffixes; a function whose entry has "keys": 0 gets none), acquire's
// and convert's arguments by name (their functions entries: args, then every
// optional group), and the numbers of a wait (waiting, protocol 4.4;
// docs/lua-protocol.md#waiting-and-the-line).
// It spells no key suffix and no argument position of its own.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// contract: the parts of the library's contract this client reads.
type contract struct {
	Protocol string `json:"protocol"`
	Keys     struct {
		Pattern  string   `json:"pattern"`
		Suffixes []string `json:"suffixes"`
	} `json:"keys"`
	Functions []contractFunction `json:"functions"`
	Waiting   *struct {
		RecheckMs        int64 `json:"recheck_ms"`
		MaxReservationMs int64 `json:"max_reservation_ms"`
		WakeMarginMs     int64 `json:"wake_margin_ms"`
	} `json:"waiting"`

	waiting waitNumbers // Waiting, or preWaiting for a library older than 4.4
}

// contractFunction: one function's entry. Args name the arguments in order
// ("path..." stands for one path per role of the operation); Optional are
// trailing groups, each sent whole or not at all (this client sends all).
type contractFunction struct {
	Name     string     `json:"name"`
	Keys     int        `json:"keys"`
	Args     []string   `json:"args"`
	Optional [][]string `json:"optional"`
}

// waitNumbers: how a wait paces its attempts (the contract's waiting).
type waitNumbers struct {
	Recheck        time.Duration // recheck_ms: the longest sleep between attempts
	MaxReservation time.Duration // max_reservation_ms: the longest place an attempt keeps
	WakeMargin     time.Duration // wake_margin_ms: slept past a blocker's expiry
}

// preWaiting: the numbers of a library older than protocol 4.4, whose
// contract has no "waiting" (the numbers every library has used; the one
// place this client defines them).
var preWaiting = waitNumbers{Recheck: Recheck, MaxReservation: MaxReservation, WakeMargin: time.Millisecond}

// reserve is reserve_ms of an attempt with left of its wait left (rule 3 of
// docs/lua-protocol.md#waiting-and-the-line): 0 for a request without a
// place in line (inLine false) and for the attempt at the deadline (left
// <= 0); else left in whole milliseconds rounded up, plus Recheck, at most
// MaxReservation. The one function that computes it (Acquire's wait loop,
// Client.Reservation).
func (n waitNumbers) reserve(left time.Duration, inLine bool) time.Duration {
	if !inLine || left <= 0 {
		return 0
	}
	ceil := (left + time.Millisecond - 1) / time.Millisecond * time.Millisecond
	if r := ceil + n.Recheck; r < n.MaxReservation {
		return r
	}
	return n.MaxReservation
}

// parseContract reads the JSON the library's contract function answers;
// an error when it lacks what this client needs.
func parseContract(text []byte) (*contract, error) {
	var k contract
	if err := json.Unmarshal(text, &k); err != nil {
		return nil, fmt.Errorf("the library's contract is not JSON: %v", err)
	}
	// Every key of a namespace carries its hash tag {NS}: a Cluster routes
	// a namespace's calls by it (slotKey).
	if k.Protocol == "" || len(k.Keys.Suffixes) == 0 || !strings.Contains(k.Keys.Pattern, "{NS}") ||
		!strings.Contains(k.Keys.Pattern, "<suffix>") || len(k.Functions) == 0 {
		return nil, errors.New("the library's contract lacks protocol, keys ({NS} and <suffix> in its pattern) or functions")
	}
	k.waiting = preWaiting
	if w := k.Waiting; w != nil {
		if w.RecheckMs <= 0 || w.MaxReservationMs <= 0 || w.WakeMarginMs < 0 {
			return nil, fmt.Errorf("the library's contract has waiting numbers out of range: %+v", *w)
		}
		k.waiting = waitNumbers{Recheck: time.Duration(w.RecheckMs) * time.Millisecond,
			MaxReservation: time.Duration(w.MaxReservationMs) * time.Millisecond,
			WakeMargin:     time.Duration(w.WakeMarginMs) * time.Millisecond}
	}
	return &k, nil
}

// function: the entry of fn; an error when the library has none.
func (k *contract) function(fn string) (*contractFunction, error) {
	for i := range k.Functions {
		if k.Functions[i].Name == fn {
			return &k.Functions[i], nil
		}
	}
	return nil, &BackendError{Op: fn, Err: fmt.Errorf("the library's contract (protocol %s) has no function %q", k.Protocol, fn)}
}

// namespaceKeys: the keys of namespace ns, the pattern with each suffix in
// the contract's order.
func (k *contract) namespaceKeys(ns string) []string {
	base := strings.Replace(k.Keys.Pattern, "{NS}", "{"+ns+"}", 1)
	keys := make([]string, len(k.Keys.Suffixes))
	for i, s := range k.Keys.Suffixes {
		keys[i] = strings.Replace(base, "<suffix>", s, 1)
	}
	return keys
}

// keysOf: the keys a call of fn on ns passes (none for a function whose
// entry has "keys": 0).
func (k *contract) keysOf(fn *contractFunction, ns string) []string {
	if fn.Keys == 0 {
		return nil
	}
	return k.namespaceKeys(ns)
}

// key: the namespace's key of the suffix named (the wake-up channel is
// "wake"); "" when the contract has no such suffix.
func (k *contract) key(ns, suffix string) string {
	for i, s := range k.Keys.Suffixes {
		if s == suffix {
			return k.namespaceKeys(ns)[i]
		}
	}
	return ""
}

// arguments builds fn's arguments by name: its args in order ("path..."
// stands for paths), then each optional group up to the first with a name
// values lacks (a newer library's group, or one this call does not send).
// at gives each name's index (the paths have none). An error names a
// required argument this client has no value for (a library newer than it).
func (f *contractFunction) arguments(values map[string]string, paths []string) (args []string, at map[string]int, err error) {
	at = map[string]int{}
	for _, name := range f.Args {
		if name == "path..." {
			args = append(args, paths...)
			continue
		}
		v, ok := values[name]
		if !ok {
			return nil, nil, &BackendError{Op: f.Name, Err: fmt.Errorf("the library's contract asks for argument %q, "+
				"which this client does not know (a newer library?)", name)}
		}
		at[name] = len(args)
		args = append(args, v)
	}
	for _, group := range f.Optional {
		for _, name := range group {
			if _, ok := values[name]; !ok {
				return args, at, nil
			}
		}
		for _, name := range group {
			at[name] = len(args)
			args = append(args, values[name])
		}
	}
	return args, at, nil
}

// contractCache: the contract as read, or the read under way.
type contractCache struct {
	mu      sync.Mutex
	k       *contract
	reading chan struct{} // closed when the read under way ends; nil: none
}

// contract: the library's contract, read on ns's server by the first call
// that needs it; the others wait for that read (or for their contexts). A
// read that failed is tried again by the next call.
func (c *Client) contract(ctx context.Context, ns string) (*contract, error) {
	cc := &c.contractCache
	for {
		cc.mu.Lock()
		if k := cc.k; k != nil {
			cc.mu.Unlock()
			return k, nil
		}
		if ch := cc.reading; ch != nil {
			cc.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, &ContextError{Op: "contract", Err: ctx.Err()}
			}
		}
		ch := make(chan struct{})
		cc.reading = ch
		cc.mu.Unlock()
		k, err := c.readContract(ctx, ns)
		cc.mu.Lock()
		cc.reading = nil
		if err == nil {
			cc.k = k
		}
		close(ch)
		cc.mu.Unlock()
		return k, err
	}
}

// readContract: FCALL_RO <prefix>contract 0 on ns's server. Answered
// "Function not found", the library is loaded (when its text is known) and
// asked once more.
func (c *Client) readContract(ctx context.Context, ns string) (*contract, error) {
	for attempt := 0; ; attempt++ {
		conn, err := c.be.conn(ctx, ns)
		if err != nil {
			return nil, c.callError(ctx, "contract", err)
		}
		v, err := c.exchange(ctx, "contract", conn, func(conn redis.Conn) (interface{}, error) {
			return doTimed(conn, c.readBudget(ctx), "FCALL_RO", c.prefix+"contract", 0)
		}, nil)
		if attempt == 0 && (isFunctionNotFound(err) && c.code != "" || isReadOnly(err)) {
			if err := c.recover(ctx, ns, err); err != nil {
				return nil, err
			}
			continue
		}
		if isFunctionNotFound(err) {
			return nil, &BackendError{Op: "contract", Err: fmt.Errorf("the library %s has no function 'contract' on the server: "+
				"it is not loaded (give Options.LibraryCode or LibraryFile) or older than protocol 4.2, which this client needs: %w",
				c.name, err)}
		}
		if err != nil {
			return nil, c.callError(ctx, "contract", err)
		}
		r, _ := v.([]interface{})
		if len(r) != 2 || str(r[0]) != "contract" {
			return nil, &BackendError{Op: "contract", Err: fmt.Errorf("unexpected reply %v", v)}
		}
		b, _ := r[1].([]byte)
		k, err := parseContract(b)
		if err != nil {
			return nil, &BackendError{Op: "contract", Err: err}
		}
		return k, nil
	}
}

// Wire is one call as the client sends it: its keys and the arguments
// after them.
type Wire struct {
	Keys []string
	Args []string
}

// WireIDs stand for the ids an Acquire draws at random: the new lock's ID
// and Token and, for a request that takes a place in line, the Waiter's.
type WireIDs struct {
	ID, Token, Waiter string
}

// AcquireWire answers the keys and arguments of the first attempt
// Acquire(ctx, req) would send, as if no time had passed since it began,
// with ids in place of random ones and deadline_ms "" (set per send). It
// is built by Acquire's own code from the library's contract (which it
// reads, as the default limits, like an Acquire) and sends no acquire: for
// conformance checks (the kit's protocol command, docs/clients.md).
func (c *Client) AcquireWire(ctx context.Context, req Request, ids WireIDs) (Wire, error) {
	paths, err := req.check()
	if err != nil {
		return Wire{}, err
	}
	w, err := c.prepare(ctx, "acquire", &req, paths, ids)
	if err != nil {
		return Wire{}, err
	}
	w.setReserve(w.numbers.reserve(req.Wait, w.waiter != ""))
	fn, err := w.k.function(w.fn)
	if err != nil {
		return Wire{}, err
	}
	return Wire{Keys: w.k.keysOf(fn, req.Namespace), Args: append([]string(nil), w.args...)}, nil
}

// Reservation is the reserve_ms an attempt of a waiting Acquire on ns that
// holds a place in line sends with left of its wait left: left rounded up
// to whole milliseconds plus the library's re-check interval, at most its
// longest reservation (the contract's waiting; Recheck and MaxReservation
// for a library older than protocol 4.4); 0 when left <= 0.
func (c *Client) Reservation(ctx context.Context, ns string, left time.Duration) (time.Duration, error) {
	if err := CheckNamespace(ns); err != nil {
		return 0, err
	}
	k, err := c.contract(ctx, ns)
	if err != nil {
		return 0, err
	}
	return k.waiting.reserve(left, true), nil
}
