package main

// acquire (a wait, and its cancel), convert, and protocol: what the client
// sends for an acquire (the kit's clients/kit/test_protocol.py).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"pathlock.dev/pathlock"
)

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
	if err := timing(o, &req.TTL, &req.Wait, &req.Unfair); err != nil {
		return req, o, err
	}
	return req, o, proofAndKey(&req, o)
}

// timing reads the options acquire and convert share: ttl=MS, wait=MS and
// fair=true|false (into unfair).
func timing(o map[string]string, ttl, wait *time.Duration, unfair *bool) error {
	for _, d := range []struct {
		name string
		min  int64
		into *time.Duration
	}{{"ttl", 1, ttl}, {"wait", 0, wait}} {
		if v, ok := o[d.name]; ok {
			n, err := number(d.name, v, d.min, 604800000)
			if err != nil {
				return err
			}
			*d.into = time.Duration(n) * time.Millisecond
		}
	}
	if v, ok := o["fair"]; ok {
		b, err := boolean("fair", v)
		if err != nil {
			return err
		}
		*unfair = !b
	}
	return nil
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
	if _, ok := o["key"]; ok && hasR {
		return errors.New("reenter= and key= exclude each other")
	}
	var err error
	req.IdempotencyKey, err = key(o)
	return err
}

// key reads key=KEY ("" when absent).
func key(o map[string]string) (string, error) {
	if v, ok := o["key"]; ok && v == "" {
		return "", errors.New("key= needs a value")
	}
	return o["key"], nil
}

// convert ID TOKEN OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false]
// [key=KEY]: Client.Convert, answered as acquire is. A waiting conversion
// ends at its wait=; `cancel` does not stop it (docs/cli.md): the lines
// sent meanwhile are answered after it.
func (s *shell) convert(args []word) {
	usage := errors.New("usage: convert ID TOKEN OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false] [key=KEY]")
	if len(args) < 2 {
		s.fail(usage)
		return
	}
	// ID and TOKEN are the first two words whatever they hold (as held's);
	// the options come among the words after them.
	pos, o, err := parse(args[2:], []string{"ttl", "wait", "fair", "key"})
	if err == nil && len(pos) < 2 {
		err = usage
	}
	var conv pathlock.Conversion
	if err == nil {
		conv.Op, conv.Paths = pos[0], pos[1:]
		err = timing(o, &conv.TTL, &conv.Wait, &conv.Unfair)
	}
	if err == nil {
		conv.IdempotencyKey, err = key(o)
	}
	if err != nil {
		s.fail(err)
		return
	}
	lock, err := s.c.Convert(ctx(), s.ns, pathlock.Proof{ID: args[0].text, Token: args[1].text}, conv)
	s.answer(lock, err)
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

// answer writes acquire's (or convert's) answer.
func (s *shell) answer(lock *pathlock.Lock, err error) {
	var refused *pathlock.RefusedError
	var over *pathlock.OverLimitError
	switch {
	case err == nil:
		s.reply(obj{{"granted", true}, {"id", lock.ID()}, {"token", lock.Token()}, {"fence", lock.Fence()},
			{"holds", lock.Holds()}, {"expires_in_ms", lock.ExpiresIn().Milliseconds()}})
	case errors.As(err, &refused):
		c := refused.Conflict
		out := obj{{"granted", false}}
		if refused.WouldDeadlock {
			out = append(out, kv{"would_deadlock", true})
		}
		s.reply(append(out, kv{"conflict", obj{{"id", c.ID}, {"op", c.Op}, {"role", c.Role}, {"path", c.Path},
			{"owner", c.Owner}, {"expires_in_ms", c.ExpiresIn.Milliseconds()}, {"requested_role", c.RequestedRole},
			{"requested_path", c.RequestedPath}, {"relation", string(c.Relation)}, {"queued", c.Queued}}}))
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

// kitLefts: the lefts of a wait (ms) whose reserve_ms protocol answers.
var kitLefts = []int64{1, 150, 1799, 1800, 1801, 2500, 60000}

// protocol OP PATH [PATH...] [wait=MS] [fair=0|1]: what the client sends for
// `acquire kit-owner OP PATH... ttl=1000 wait=MS`, built by the client's
// own code (Client.AcquireWire, Client.Reservation): the keys, the first
// attempt's arguments with fixed ids, and reserve_ms for each of kitLefts
// (docs/clients.md, clients/kit/test_protocol.py).
func (s *shell) protocol(args []word) {
	pos, o, err := parse(args, []string{"wait", "fair"})
	if err == nil && len(pos) < 2 {
		err = errors.New("usage: protocol OP PATH [PATH...] [wait=MS] [fair=0|1]")
	}
	req := pathlock.Request{Namespace: s.ns, Owner: "kit-owner", TTL: time.Second}
	if err == nil {
		req.Op, req.Paths = pos[0], pos[1:]
		err = protocolOptions(&req, o)
	}
	var wire pathlock.Wire
	if err == nil {
		wire, err = s.c.AcquireWire(ctx(), req, pathlock.WireIDs{ID: "kit-id", Token: "kit-token", Waiter: "kit-waiter"})
	}
	reserve := obj{}
	for _, left := range kitLefts {
		if err != nil {
			break
		}
		var r time.Duration
		r, err = s.c.Reservation(ctx(), s.ns, time.Duration(left)*time.Millisecond)
		reserve = append(reserve, kv{strconv.FormatInt(left, 10), r.Milliseconds()})
	}
	if err != nil {
		s.fail(err)
		return
	}
	s.reply(obj{{"keys", wire.Keys}, {"acquire_args", wire.Args}, {"reserve_ms", reserve}})
}

// protocolOptions reads protocol's wait=MS (default 0) and fair=0|1 (default 1).
func protocolOptions(req *pathlock.Request, o map[string]string) error {
	if v, ok := o["wait"]; ok {
		n, err := number("wait", v, 0, 604800000)
		if err != nil {
			return err
		}
		req.Wait = time.Duration(n) * time.Millisecond
	}
	switch v, ok := o["fair"]; {
	case !ok || v == "1":
	case v == "0":
		req.Unfair = true
	default:
		return fmt.Errorf("fair=%s: 0 or 1", v)
	}
	return nil
}
