package main

// The commands on locks held (held, release, renew, force-release, keep,
// kept, unkeep) and the listings (locks, blockers, waiters).

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"pathlock.dev/pathlock"
)

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

// blockers OP PATH [DST_PATH] [fair=true|false] [limit=N] [converts=ID]:
// what refuses that request now, or with converts= the dry run of a
// conversion of lock ID (Client.ConversionBlockers: fair=false asks the
// held locks only). Without converts=, fair=false leaves the places in
// line out of Blockers' answer.
func (s *shell) blockers(args []word) {
	pos, o, err := parse(args, []string{"fair", "limit", "converts"})
	if err == nil && (len(pos) < 2 || len(pos) > 3) {
		err = errors.New("blockers OP PATH [DST_PATH] [fair=true|false] [limit=N] [converts=ID]")
	}
	fair := true
	if v, ok := o["fair"]; ok && err == nil {
		fair, err = boolean("fair", v)
	}
	var limit int64
	if err == nil {
		limit, err = rowLimit(o)
	}
	if err != nil {
		s.fail(err)
		return
	}
	var rows []pathlock.Blocker
	var truncated bool
	if id, ok := o["converts"]; ok {
		conv := pathlock.Conversion{Op: pos[0], Paths: pos[1:], Unfair: !fair}
		rows, truncated, err = s.c.ConversionBlockers(ctx(), s.ns, id, conv, int(limit))
	} else {
		rows, truncated, err = s.c.Blockers(ctx(), s.ns, pos[0], pos[1:], int(limit))
	}
	if err != nil {
		s.fail(err)
		return
	}
	out := make([]obj, 0, len(rows))
	for _, b := range rows {
		if b.Queued && !fair {
			continue // an unfair request ignores the line
		}
		out = append(out, blockerRow(b))
	}
	s.reply(obj{{"blockers", out}, {"truncated", truncated}})
}

// blockerRow: a blocker as docs/json.md#blocker shows it.
func blockerRow(b pathlock.Blocker) obj {
	kind := "lock"
	if b.Queued {
		kind = "waiter"
	}
	return obj{{"kind", kind}, {"queued", b.Queued}, {"id", b.ID}, {"owner", b.Owner}, {"op", b.Op}, {"role", b.Role},
		{"path", b.Path}, {"requested_role", b.RequestedRole}, {"requested_path", b.RequestedPath},
		{"relation", string(b.Relation)}, {"fence", b.Fence}, {"holds", b.Holds},
		{"expires_in_ms", b.ExpiresIn.Milliseconds()}, {"waited_ms", b.Waited.Milliseconds()}}
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
		row := obj{{"id", w.ID}, {"owner", w.Owner}, {"op", w.Op}, {"targets", targets(w.Targets)},
			{"waited_ms", w.Waited.Milliseconds()}, {"expires_in_ms", w.ExpiresIn.Milliseconds()}}
		if w.Converts != "" {
			row = append(row, kv{"converts", w.Converts})
		}
		return row
	})
	s.reply(obj{{"waiters", out}})
}
