package webdav_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/webdav"

	plwebdav "pathlock.dev/pathlock/webdav"
)

var now = time.Now()

func create(t *testing.T, ls webdav.LockSystem, root string, zero bool, d time.Duration) string {
	t.Helper()
	token, err := ls.Create(now, webdav.LockDetails{Root: root, Duration: d, OwnerXML: "<D:href>t</D:href>", ZeroDepth: zero})
	if err != nil {
		t.Fatalf("Create %s: %v", root, err)
	}
	return token
}

func TestCreateRefusesWhatRFC4918Covers(t *testing.T) {
	ls := newLS(t, newNS(), plwebdav.Options{})
	inf := create(t, ls, "/a", false, time.Minute)
	for _, c := range []struct {
		root string
		zero bool
	}{{"/a", true}, {"/a/b", true}, {"/a/b/c", false}, {"/", false}} {
		if _, err := ls.Create(now, webdav.LockDetails{Root: c.root, Duration: time.Minute, ZeroDepth: c.zero}); err != webdav.ErrLocked {
			t.Errorf("Create %s (zero depth %v) beside a Depth infinity lock on /a: %v, want ErrLocked", c.root, c.zero, err)
		}
	}
	create(t, ls, "/ab", false, time.Minute) // by whole path components
	create(t, ls, "/", true, time.Minute)    // Depth 0 on an ancestor does not cover /a
	zero := create(t, ls, "/z", true, time.Minute)
	create(t, ls, "/z/member", true, time.Minute) // Depth 0 does not cover members' content
	if _, err := ls.Create(now, webdav.LockDetails{Root: "/z/", Duration: time.Minute, ZeroDepth: true}); err != webdav.ErrLocked {
		t.Errorf("Create /z/ on a locked /z: %v", err)
	}
	for _, token := range []string{inf, zero} {
		u, err := url.Parse(token)
		if err != nil || !u.IsAbs() || strings.ContainsAny(token, " \t\r\n<>") {
			t.Errorf("token %q is no absolute URI without whitespace (%v)", token, err)
		}
	}
	if err := ls.Unlock(now, inf); err != nil {
		t.Fatal(err)
	}
	create(t, ls, "/a/b", true, time.Minute)
}

func TestRefreshKeepsTheOwnerXML(t *testing.T) {
	ls := newLS(t, newNS(), plwebdav.Options{})
	owner := `<D:href>http://example.org/~ejw/contact.html</D:href>`
	token, err := ls.Create(now, webdav.LockDetails{Root: "/doc.txt", Duration: time.Minute, OwnerXML: owner, ZeroDepth: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ls.Refresh(now, token, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := webdav.LockDetails{Root: "/doc.txt", Duration: 2 * time.Minute, OwnerXML: owner, ZeroDepth: true}
	if got != want {
		t.Errorf("Refresh: %+v, want %+v", got, want)
	}
	locks, err := ls.Locks(context.Background(), "/doc.txt")
	if err != nil || len(locks) != 1 || locks[0].OwnerXML != owner || locks[0].Lease.ExpiresIn <= time.Minute {
		t.Errorf("Locks after Refresh: %+v, %v", locks, err)
	}
	if _, err := ls.Create(now, webdav.LockDetails{Root: "/x", OwnerXML: strings.Repeat("o", plwebdav.MaxOwnerXML+1)}); err == nil ||
		err == webdav.ErrLocked {
		t.Errorf("an owner XML longer than MaxOwnerXML: %v", err)
	}
	if err := ls.Unlock(now, token); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{token, "urn:uuid:1", plwebdav.TokenPrefix + ls.Namespace() + ":x"} {
		if _, err := ls.Refresh(now, bad, time.Minute); err != webdav.ErrNoSuchLock {
			t.Errorf("Refresh %q: %v, want ErrNoSuchLock", bad, err)
		}
		if err := ls.Unlock(now, bad); err != webdav.ErrNoSuchLock {
			t.Errorf("Unlock %q: %v, want ErrNoSuchLock", bad, err)
		}
	}
}

func TestConfirmNeedsACoveringLiveLock(t *testing.T) {
	ls := newLS(t, newNS(), plwebdav.Options{})
	inf := create(t, ls, "/c", false, time.Minute)
	zero := create(t, ls, "/d", true, time.Minute)
	cond := func(tokens ...string) (out []webdav.Condition) {
		for _, tk := range tokens {
			out = append(out, webdav.Condition{Token: tk})
		}
		return out
	}
	release, err := ls.Confirm(now, "/c/x/y", "/d", cond(zero, inf)...)
	if err != nil {
		t.Fatal(err)
	}
	// Claimed: not again, and not unlocked, until released.
	if _, err := ls.Confirm(now, "/c", "", cond(inf)...); err != webdav.ErrConfirmationFailed {
		t.Errorf("Confirm of a claimed lock: %v", err)
	}
	if err := ls.Unlock(now, inf); err != webdav.ErrLocked {
		t.Errorf("Unlock of a claimed lock: %v", err)
	}
	release()
	for _, c := range []struct {
		name0, name1 string
		tokens       []string
	}{{"/d/member", "", []string{zero}}, {"/c", "/e", []string{inf}}, {"/c", "", nil}, {"/cx", "", []string{inf}}} {
		if _, err := ls.Confirm(now, c.name0, c.name1, cond(c.tokens...)...); !errors.Is(err, webdav.ErrConfirmationFailed) {
			t.Errorf("Confirm %q %q: %v, want ErrConfirmationFailed", c.name0, c.name1, err)
		}
	}
	if err := ls.Unlock(now, inf); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.Confirm(now, "/c", "", cond(inf)...); err != webdav.ErrConfirmationFailed {
		t.Errorf("Confirm of an unlocked lock: %v", err)
	}
}

func TestTwoLockSystemsShareTheirLocks(t *testing.T) {
	ns := newNS()
	one, two := newLS(t, ns, plwebdav.Options{}), newLS(t, ns, plwebdav.Options{})
	token := create(t, one, "/shared", false, time.Minute)
	if _, err := two.Create(now, webdav.LockDetails{Root: "/shared/f", Duration: time.Minute, ZeroDepth: true}); err != webdav.ErrLocked {
		t.Errorf("the other lock system: %v, want ErrLocked", err)
	}
	release, err := two.Confirm(now, "/shared/f", "", webdav.Condition{Token: token})
	if err != nil {
		t.Fatalf("the holder's token through the other lock system: %v", err)
	}
	release()
	if err := two.Unlock(now, token); err != nil {
		t.Fatal(err)
	}
	create(t, one, "/shared/f", true, time.Minute)
}

func TestLeasesEnd(t *testing.T) {
	ls := newLS(t, newNS(), plwebdav.Options{KeepLease: time.Second})
	create(t, ls, "/timed", true, time.Second)
	kept := create(t, ls, "/kept", true, -1) // infinite: renewed by this process
	locked := func(root string) bool {
		token, err := ls.Create(now, webdav.LockDetails{Root: root, Duration: time.Minute, ZeroDepth: true})
		if err == nil {
			_ = ls.Unlock(now, token)
		}
		return err == webdav.ErrLocked
	}
	start := time.Now()
	eventually(t, 5*time.Second, "the 1 s lease of /timed ends", func() bool { return !locked("/timed") })
	// /kept outlived three of its 1 s leases, renewed.
	for time.Since(start) < 3*time.Second {
		if !locked("/kept") {
			t.Fatalf("the infinite lock ended after %v", time.Since(start))
		}
		time.Sleep(100 * time.Millisecond)
	}
	ls.Close() // this process stops renewing: the lease ends
	eventually(t, 3*time.Second, "the lease of /kept ends after Close", func() bool { return !locked("/kept") })
	if _, err := ls.Refresh(now, kept, time.Minute); err != webdav.ErrNoSuchLock {
		t.Errorf("Refresh of an ended lease: %v", err)
	}
}

func TestSharedLocksCoexist(t *testing.T) {
	ls := newLS(t, newNS(), plwebdav.Options{})
	shared := func(root string, zero bool) (string, error) {
		return ls.CreateShared(now, webdav.LockDetails{Root: root, Duration: time.Minute, OwnerXML: "s", ZeroDepth: zero})
	}
	one, err := shared("/s", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shared("/s", true); err != nil {
		t.Errorf("a second shared lock on /s: %v", err)
	}
	if _, err := shared("/s/inner", false); err != nil {
		t.Errorf("a shared lock inside a shared Depth infinity lock: %v", err)
	}
	for _, root := range []string{"/s", "/s/inner/x", "/"} {
		if _, err := ls.Create(now, webdav.LockDetails{Root: root, Duration: time.Minute}); err != webdav.ErrLocked {
			t.Errorf("an exclusive Depth infinity lock on %s beside shared ones: %v", root, err)
		}
	}
	locks, err := ls.Locks(context.Background(), "/s/inner")
	if err != nil || len(locks) != 2 || !locks[0].Shared || !locks[1].Shared {
		t.Errorf("Locks /s/inner: %+v, %v", locks, err)
	}
	release, err := ls.Confirm(now, "/s/f", "", webdav.Condition{Token: one})
	if err != nil {
		t.Fatalf("Confirm with a shared lock's token: %v", err)
	}
	release()
	if err := ls.Unlock(now, one); err != nil {
		t.Fatal(err)
	}
}
