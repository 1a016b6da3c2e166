package webdav

import (
	"context"
	"errors"
	"time"

	"pathlock.dev/pathlock"
)

// keep renews an infinite-timeout lock every third of KeepLease until
// unkeep, or until the lock is gone (unlocked through another instance).
func (ls *LockSystem) keep(token, id, secret string) {
	stop := make(chan struct{})
	ls.mu.Lock()
	ls.kept[token] = stop
	ls.mu.Unlock()
	go func() {
		tick := time.NewTicker(ls.o.KeepLease / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), ls.o.KeepLease/3)
			_, err := ls.c.Renew(ctx, ls.o.Namespace, id, secret, ls.o.KeepLease)
			cancel()
			if errors.Is(err, pathlock.ErrNotHolder) {
				ls.unkeep(token)
				return
			}
		}
	}()
}

// unkeep stops renewing a lock (if this process renews it).
func (ls *LockSystem) unkeep(token string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if stop, ok := ls.kept[token]; ok {
		close(stop)
		delete(ls.kept, token)
	}
}

// Close stops renewing the infinite-timeout locks of this process; their
// leases then end within KeepLease.
func (ls *LockSystem) Close() {
	ls.mu.Lock()
	tokens := make([]string, 0, len(ls.kept))
	for token := range ls.kept {
		tokens = append(tokens, token)
	}
	ls.mu.Unlock()
	for _, token := range tokens {
		ls.unkeep(token)
	}
}
