// Package webdav is a golang.org/x/net/webdav LockSystem on pathlock: the
// locks of every WebDAV server that uses it with one Redis are one set, so
// several instances behind one name share their locks (docs/webdav.md).
//
//	client, _ := pathlock.New(ctx, pathlock.Options{URL: url, LibraryFile: "webdav/pathlock_library.lua"})
//	ls, _ := plwebdav.New(client, plwebdav.Options{})
//	h := &webdav.Handler{FileSystem: plwebdav.Discovery(webdav.Dir(root), ls), LockSystem: ls}
//
// The library must be the one of matrix/webdav.json: a WebDAV LOCK takes
// the operation lock_exclusive_0 or lock_exclusive_inf (Depth 0 or
// infinity) on the resource's path, and the handler's own short locks
// around PUT, DELETE, MOVE and COPY are the same Depth 0 locks, as with
// webdav.NewMemLS.
package webdav

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/webdav"

	"pathlock.dev/pathlock"
)

// Operations of matrix/webdav.json that a LockSystem takes.
const (
	OpExclusive0   = "lock_exclusive_0"
	OpExclusiveInf = "lock_exclusive_inf"
	OpShared0      = "lock_shared_0"
	OpSharedInf    = "lock_shared_inf"
)

// TokenPrefix begins every lock token (an absolute URI, RFC 3986 4.3):
// urn:pathlock:<namespace>:<id>:<secret>:<depth>:<escaped root>, depth
// 0 or infinity (exclusive), shared-0 or shared-infinity.
const TokenPrefix = "urn:pathlock:"

// ownerPrefix begins a pathlock owner; the rest is the LOCK's owner XML.
const ownerPrefix = "dav:"

// MaxOwnerXML is the longest <owner> XML kept with a lock (pathlock owners
// are 1 to 256 bytes). A longer one makes Create fail (500).
const MaxOwnerXML = 256 - len(ownerPrefix)

// Options configure a LockSystem.
type Options struct {
	// Namespace of the locks (default "webdav"). Servers that share locks
	// use the same Redis, library and namespace.
	Namespace string
	// KeepLease: the lease of a lock with an infinite timeout (the
	// handler's own locks around a request, and "Timeout: Infinite"),
	// renewed by the process that holds it until it is unlocked, so it ends
	// soon after that process does (default 30 s).
	KeepLease time.Duration
	// CallTimeout bounds each call to Redis (default 10 s).
	CallTimeout time.Duration
}

// LockSystem implements webdav.LockSystem on a pathlock client.
type LockSystem struct {
	c  *pathlock.Client
	o  Options
	mu sync.Mutex
	// held: tokens claimed by Confirm in this process until their release.
	held map[string]bool
	// kept: infinite-timeout locks this process renews, by token.
	kept map[string]chan struct{}
}

var _ webdav.LockSystem = (*LockSystem)(nil)

// New makes a LockSystem on client c, whose library must have the
// operations of matrix/webdav.json.
func New(c *pathlock.Client, o Options) (*LockSystem, error) {
	if o.Namespace == "" {
		o.Namespace = "webdav"
	}
	if err := pathlock.CheckNamespace(o.Namespace); err != nil {
		return nil, err
	}
	if o.KeepLease == 0 {
		o.KeepLease = 30 * time.Second
	}
	if o.KeepLease < time.Second {
		return nil, errors.New("pathlock webdav: KeepLease must be at least 1 s")
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 10 * time.Second
	}
	return &LockSystem{c: c, o: o, held: map[string]bool{}, kept: map[string]chan struct{}{}}, nil
}

// Namespace is the pathlock namespace of the locks.
func (ls *LockSystem) Namespace() string { return ls.o.Namespace }

func (ls *LockSystem) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), ls.o.CallTimeout)
}

// lockToken is a parsed lock token.
type lockToken struct {
	id, secret string
	zeroDepth  bool
	shared     bool
	root       string
}

func cleanName(name string) string { return path.Clean("/" + name) }

func (ls *LockSystem) format(t lockToken) string {
	depth := "infinity"
	if t.zeroDepth {
		depth = "0"
	}
	if t.shared {
		depth = "shared-" + depth
	}
	return TokenPrefix + ls.o.Namespace + ":" + t.id + ":" + t.secret + ":" + depth + ":" + url.PathEscape(t.root)
}

// parse reads a token of this namespace; ok is false for any other text.
func (ls *LockSystem) parse(token string) (t lockToken, ok bool) {
	prefix := TokenPrefix + ls.o.Namespace + ":"
	if !strings.HasPrefix(token, prefix) {
		return t, false
	}
	rest := token[len(prefix):]
	f := strings.SplitN(rest, ":", 4)
	if len(f) != 4 || f[0] == "" || f[1] == "" {
		return t, false
	}
	depth := strings.TrimPrefix(f[2], "shared-")
	if depth != "0" && depth != "infinity" {
		return t, false
	}
	root, err := url.PathUnescape(f[3])
	if err != nil || !strings.HasPrefix(root, "/") {
		return t, false
	}
	return lockToken{id: f[0], secret: f[1], zeroDepth: depth == "0", shared: depth != f[2], root: root}, true
}

// lease: the pathlock TTL of a WebDAV timeout (negative: infinite, kept).
func (ls *LockSystem) lease(d time.Duration) (ttl time.Duration, keep bool) {
	switch {
	case d < 0:
		return ls.o.KeepLease, true
	case d < time.Second:
		return time.Second, false
	case d > pathlock.MaxTTL:
		return pathlock.MaxTTL, false
	}
	return d, false
}

// Create takes an exclusive write lock on details.Root (webdav.LockSystem).
func (ls *LockSystem) Create(now time.Time, details webdav.LockDetails) (string, error) {
	return ls.create(details, false)
}

// CreateShared takes a shared write lock on details.Root: it coexists with
// other shared locks and refuses exclusive ones (matrix/webdav.json). The
// standard handler never asks for one (it answers shared LOCKs with 501);
// SharedLocks does.
func (ls *LockSystem) CreateShared(now time.Time, details webdav.LockDetails) (string, error) {
	return ls.create(details, true)
}

func (ls *LockSystem) create(details webdav.LockDetails, shared bool) (string, error) {
	if len(details.OwnerXML) > MaxOwnerXML {
		return "", fmt.Errorf("pathlock webdav: owner XML of %d bytes; at most %d are kept", len(details.OwnerXML), MaxOwnerXML)
	}
	root := cleanName(details.Root)
	op := map[[2]bool]string{{false, false}: OpExclusiveInf, {false, true}: OpExclusive0,
		{true, false}: OpSharedInf, {true, true}: OpShared0}[[2]bool{shared, details.ZeroDepth}]
	ttl, keep := ls.lease(details.Duration)
	ctx, cancel := ls.ctx()
	defer cancel()
	l, err := ls.c.Acquire(ctx, pathlock.Request{Namespace: ls.o.Namespace, Owner: ownerPrefix + details.OwnerXML,
		Op: op, Paths: []string{root}, TTL: ttl})
	if errors.Is(err, pathlock.ErrRefused) {
		return "", webdav.ErrLocked
	}
	if err != nil {
		return "", err
	}
	token := ls.format(lockToken{id: l.ID(), secret: l.Token(), zeroDepth: details.ZeroDepth, shared: shared, root: root})
	if keep {
		ls.keep(token, l.ID(), l.Token())
	}
	return token, nil
}

// Refresh gives the lock a new timeout (webdav.LockSystem).
func (ls *LockSystem) Refresh(now time.Time, token string, duration time.Duration) (webdav.LockDetails, error) {
	t, ok := ls.parse(token)
	if !ok {
		return webdav.LockDetails{}, webdav.ErrNoSuchLock
	}
	ttl, keep := ls.lease(duration)
	ctx, cancel := ls.ctx()
	defer cancel()
	if _, err := ls.c.Renew(ctx, ls.o.Namespace, t.id, t.secret, ttl); err != nil {
		if errors.Is(err, pathlock.ErrNotHolder) {
			return webdav.LockDetails{}, webdav.ErrNoSuchLock
		}
		return webdav.LockDetails{}, err
	}
	ls.unkeep(token)
	if keep {
		ls.keep(token, t.id, t.secret)
	}
	owner, err := ls.ownerOf(ctx, t)
	if err != nil {
		return webdav.LockDetails{}, err
	}
	return webdav.LockDetails{Root: t.root, Duration: duration, OwnerXML: owner, ZeroDepth: t.zeroDepth}, nil
}

// ownerOf finds the owner XML of a live lock among the locks on its root.
func (ls *LockSystem) ownerOf(ctx context.Context, t lockToken) (string, error) {
	after := ""
	for {
		page, err := ls.c.List(ctx, ls.o.Namespace, t.root, 1000, after)
		if err != nil {
			return "", err
		}
		for _, li := range page.Locks {
			if li.ID == t.id {
				return strings.TrimPrefix(li.Owner, ownerPrefix), nil
			}
		}
		if page.Next == "" {
			return "", webdav.ErrNoSuchLock
		}
		after = page.Next
	}
}

// Unlock removes the lock (webdav.LockSystem). A lock claimed by a request
// of this process (Confirm) answers ErrLocked until that request ends.
func (ls *LockSystem) Unlock(now time.Time, token string) error {
	t, ok := ls.parse(token)
	if !ok {
		return webdav.ErrNoSuchLock
	}
	ls.mu.Lock()
	held := ls.held[token]
	ls.mu.Unlock()
	if held {
		return webdav.ErrLocked
	}
	ls.unkeep(token)
	ctx, cancel := ls.ctx()
	defer cancel()
	if _, err := ls.c.Release(ctx, ls.o.Namespace, t.id, t.secret); err != nil {
		if errors.Is(err, pathlock.ErrNotHolder) {
			return webdav.ErrNoSuchLock
		}
		return err
	}
	return nil
}
