package webdav

import (
	"context"
	"encoding/xml"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"strings"

	"golang.org/x/net/webdav"

	"pathlock.dev/pathlock"
)

// Lock is a live WebDAV lock that covers a resource.
type Lock struct {
	Root      string // the locked resource
	ZeroDepth bool
	Shared    bool
	OwnerXML  string
	Lease     pathlock.Blocker // the pathlock lock (ID, Owner, Op, ExpiresIn, ...)
}

// Locks returns the live locks that cover name: its own, and those at
// Depth infinity on its ancestors, through whichever server they were taken.
func (ls *LockSystem) Locks(ctx context.Context, name string) ([]Lock, error) {
	rows, _, err := ls.c.Blockers(ctx, ls.o.Namespace, OpExclusive0, []string{cleanName(name)}, 1000)
	if err != nil {
		return nil, err
	}
	var out []Lock
	for _, b := range rows {
		if b.Queued || !strings.HasPrefix(b.Op, "lock_") {
			continue
		}
		out = append(out, Lock{Root: b.Path, ZeroDepth: strings.HasSuffix(b.Op, "_0"),
			Shared: strings.HasPrefix(b.Op, "lock_shared"), OwnerXML: strings.TrimPrefix(b.Owner, ownerPrefix), Lease: b})
	}
	return out, nil
}

// activeLock renders one lock as RFC 4918's DAV:activelock. The lock token
// is left out: with pathlock it is the holder's proof (its secret), and the
// holder has it from the LOCK response.
func activeLock(l Lock) string {
	var b strings.Builder
	scope, depth := "exclusive", "infinity"
	if l.Shared {
		scope = "shared"
	}
	if l.ZeroDepth {
		depth = "0"
	}
	fmt.Fprintf(&b, `<D:activelock xmlns:D="DAV:"><D:locktype><D:write/></D:locktype><D:lockscope><D:%s/></D:lockscope>`, scope)
	fmt.Fprintf(&b, `<D:depth>%s</D:depth>`, depth)
	if l.OwnerXML != "" {
		fmt.Fprintf(&b, `<D:owner>%s</D:owner>`, l.OwnerXML)
	}
	secs := int64((l.Lease.ExpiresIn.Milliseconds() + 999) / 1000)
	href := (&url.URL{Path: l.Root}).EscapedPath()
	fmt.Fprintf(&b, `<D:timeout>Second-%d</D:timeout><D:lockroot><D:href>%s</D:href></D:lockroot></D:activelock>`,
		secs, html.EscapeString(href))
	return b.String()
}

var lockDiscovery = xml.Name{Space: "DAV:", Local: "lockdiscovery"}

// Discovery wraps a FileSystem so that PROPFIND answers DAV:lockdiscovery
// from the LockSystem (the standard handler leaves it empty). The
// property is given as a dead property of every file; other dead
// properties and PROPPATCH behave as the wrapped FileSystem's.
func Discovery(fs webdav.FileSystem, ls *LockSystem) webdav.FileSystem {
	return &discoveryFS{FileSystem: fs, ls: ls}
}

type discoveryFS struct {
	webdav.FileSystem
	ls *LockSystem
}

func (d *discoveryFS) OpenFile(ctx context.Context, name string, flag int, perm os.FileMode) (webdav.File, error) {
	f, err := d.FileSystem.OpenFile(ctx, name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &discoveryFile{File: f, ctx: ctx, name: name, ls: d.ls}, nil
}

type discoveryFile struct {
	webdav.File
	ctx  context.Context
	name string
	ls   *LockSystem
}

// DeadProps: the wrapped file's, and DAV:lockdiscovery.
func (f *discoveryFile) DeadProps() (map[xml.Name]webdav.Property, error) {
	props := map[xml.Name]webdav.Property{}
	if dph, ok := f.File.(webdav.DeadPropsHolder); ok {
		inner, err := dph.DeadProps()
		if err != nil {
			return nil, err
		}
		for k, v := range inner {
			props[k] = v
		}
	}
	locks, err := f.ls.Locks(f.ctx, f.name)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, l := range locks {
		b.WriteString(activeLock(l))
	}
	props[lockDiscovery] = webdav.Property{XMLName: lockDiscovery, InnerXML: []byte(b.String())}
	return props, nil
}

// Patch: the wrapped file's; without dead properties every change is
// refused (403), as the handler answers for such a file.
func (f *discoveryFile) Patch(patches []webdav.Proppatch) ([]webdav.Propstat, error) {
	if dph, ok := f.File.(webdav.DeadPropsHolder); ok {
		return dph.Patch(patches)
	}
	forbidden := webdav.Propstat{Status: http.StatusForbidden}
	for _, p := range patches {
		for _, prop := range p.Props {
			forbidden.Props = append(forbidden.Props, webdav.Property{XMLName: prop.XMLName})
		}
	}
	return []webdav.Propstat{forbidden}, nil
}
