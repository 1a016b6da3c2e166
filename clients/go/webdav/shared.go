package webdav

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/webdav"
)

// SharedLocks wraps the standard handler so that a LOCK with lockscope
// shared is granted (CreateShared) instead of answered with 501; every other
// request, a refresh included, goes to the handler unchanged. Holders of
// shared locks write with their tokens as holders of exclusive ones do
// (Confirm). A refresh of a shared lock is answered by the handler, whose
// answer calls every lock exclusive (its LockDetails has no scope).
func SharedLocks(h *webdav.Handler, ls *LockSystem) http.Handler {
	return &sharedLocks{h: h, ls: ls}
}

type sharedLocks struct {
	h  *webdav.Handler
	ls *LockSystem
}

// lockInfo: the parts of a LOCK body that choose a shared lock.
type lockInfo struct {
	XMLName xml.Name `xml:"DAV: lockinfo"`
	Scope   struct {
		Shared *struct{} `xml:"DAV: shared"`
	} `xml:"DAV: lockscope"`
	Type struct {
		Write *struct{} `xml:"DAV: write"`
	} `xml:"DAV: locktype"`
	Owner struct {
		InnerXML string `xml:",innerxml"`
	} `xml:"DAV: owner"`
}

func (s *sharedLocks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != "LOCK" || r.Body == nil {
		s.h.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var li lockInfo
	if len(body) == 0 || xml.Unmarshal(body, &li) != nil || li.Scope.Shared == nil || li.Type.Write == nil {
		s.h.ServeHTTP(w, r)
		return
	}
	status, err := s.lockShared(w, r, li)
	if err != nil {
		http.Error(w, err.Error(), status)
	}
}

// parseLockHeaders reads Depth (0 or infinity) and the first Timeout.
func parseLockHeaders(r *http.Request) (zero bool, d time.Duration, err error) {
	switch r.Header.Get("Depth") {
	case "", "infinity":
	case "0":
		zero = true
	default:
		return false, 0, fmt.Errorf("Depth must be 0 or infinity on a LOCK")
	}
	t := strings.TrimSpace(strings.Split(r.Header.Get("Timeout"), ",")[0])
	switch {
	case t == "" || t == "Infinite":
		return zero, -1, nil
	case strings.HasPrefix(t, "Second-"):
		n, err := strconv.ParseUint(t[len("Second-"):], 10, 32)
		if err != nil {
			return false, 0, fmt.Errorf("bad Timeout %q", t)
		}
		return zero, time.Duration(n) * time.Second, nil
	}
	return false, 0, fmt.Errorf("bad Timeout %q", t)
}

func (s *sharedLocks) lockShared(w http.ResponseWriter, r *http.Request, li lockInfo) (int, error) {
	zero, d, err := parseLockHeaders(r)
	if err != nil {
		return http.StatusBadRequest, err
	}
	name := strings.TrimPrefix(r.URL.Path, s.h.Prefix)
	if len(name) == len(r.URL.Path) && s.h.Prefix != "" {
		return http.StatusNotFound, fmt.Errorf("outside %s", s.h.Prefix)
	}
	details := webdav.LockDetails{Root: name, Duration: d, OwnerXML: li.Owner.InnerXML, ZeroDepth: zero}
	token, err := s.ls.CreateShared(time.Now(), details)
	if err == webdav.ErrLocked {
		return http.StatusLocked, err
	} else if err != nil {
		return http.StatusInternalServerError, err
	}
	created := false
	if _, err := s.h.FileSystem.Stat(r.Context(), name); err != nil {
		f, err := s.h.FileSystem.OpenFile(r.Context(), name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0666)
		if err != nil {
			_ = s.ls.Unlock(time.Now(), token)
			return http.StatusInternalServerError, err
		}
		f.Close()
		created = true
	}
	w.Header().Set("Lock-Token", "<"+token+">")
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	if created {
		w.WriteHeader(http.StatusCreated)
	}
	writeSharedLock(w, token, r.URL.Path, details)
	return 0, nil
}

func writeSharedLock(w io.Writer, token, href string, ld webdav.LockDetails) {
	depth, timeout := "infinity", "Infinite"
	if ld.ZeroDepth {
		depth = "0"
	}
	if ld.Duration >= 0 {
		timeout = "Second-" + strconv.FormatInt(int64(ld.Duration/time.Second), 10)
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?>`+"\n"+`<D:prop xmlns:D="DAV:"><D:lockdiscovery><D:activelock>`+
		`<D:locktype><D:write/></D:locktype><D:lockscope><D:shared/></D:lockscope><D:depth>%s</D:depth>`+
		`<D:owner>%s</D:owner><D:timeout>%s</D:timeout><D:locktoken><D:href>%s</D:href></D:locktoken>`+
		`<D:lockroot><D:href>%s</D:href></D:lockroot></D:activelock></D:lockdiscovery></D:prop>`,
		depth, ld.OwnerXML, timeout, html.EscapeString(token), html.EscapeString(href))
}
