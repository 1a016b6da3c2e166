package main

// The words of a line (docs/cli.md#quoting): quoted and plain words,
// name=value options, numbers and booleans, and deadline=MS.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

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
