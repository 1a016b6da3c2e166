package webdav

import (
	"context"
	"strings"
	"time"

	"golang.org/x/net/webdav"
)

// Confirm checks that the conditions name live locks that cover name0 and
// name1 (either may be ""), and claims them in this process until release
// is called (webdav.LockSystem). As webdav.NewMemLS: a lock covers its root
// and, at Depth infinity, every path inside it; each name needs one; a lock
// claimed by another request of this process does not count; Not and ETag
// conditions are not evaluated. Whether a lock is live is asked of Redis,
// so a lock taken through another instance confirms here.
func (ls *LockSystem) Confirm(now time.Time, name0, name1 string, conditions ...webdav.Condition) (func(), error) {
	ctx, cancel := ls.ctx()
	defer cancel()
	var claim []string
	for _, name := range []string{name0, name1} {
		if name == "" {
			continue
		}
		token, err := ls.lookup(ctx, cleanName(name), conditions)
		if err != nil {
			return nil, err
		}
		if token == "" {
			return nil, webdav.ErrConfirmationFailed
		}
		if len(claim) == 0 || claim[0] != token {
			claim = append(claim, token)
		}
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, token := range claim {
		if ls.held[token] {
			return nil, webdav.ErrConfirmationFailed
		}
	}
	for _, token := range claim {
		ls.held[token] = true
	}
	return func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		for _, token := range claim {
			delete(ls.held, token)
		}
	}, nil
}

// covers: does the lock of t cover name?
func covers(t lockToken, name string) bool {
	if name == t.root {
		return true
	}
	return !t.zeroDepth && (t.root == "/" || strings.HasPrefix(name, t.root+"/"))
}

// lookup returns the first condition's token whose live lock covers name
// and that no request of this process claims, or "".
func (ls *LockSystem) lookup(ctx context.Context, name string, conditions []webdav.Condition) (string, error) {
	for _, c := range conditions {
		t, ok := ls.parse(c.Token)
		if !ok || !covers(t, name) {
			continue
		}
		ls.mu.Lock()
		held := ls.held[c.Token]
		ls.mu.Unlock()
		if held {
			continue
		}
		live, err := ls.c.Held(ctx, ls.o.Namespace, t.id, t.secret)
		if err != nil {
			return "", err
		}
		if live {
			return c.Token, nil
		}
	}
	return "", nil
}
