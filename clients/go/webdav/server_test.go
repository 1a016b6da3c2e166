package webdav_test

import (
	"bufio"
	"context"

	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// instance is one pathlock-webdav process.
type instance struct {
	url string
	cmd *exec.Cmd
}

// serve starts pathlock-webdav on a free loopback port with these extra
// arguments and waits for its "serving" line; the test stops it.
func serve(t *testing.T, root string, args ...string) *instance {
	t.Helper()
	all := append([]string{"--root", root, "--listen", "127.0.0.1:0"}, args...)
	cmd := exec.Command(program, all...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case line := <-lines:
		i := strings.Index(line, "http://")
		if i < 0 {
			t.Fatalf("pathlock-webdav said %q", line)
		}
		return &instance{url: strings.Fields(line[i:])[0], cmd: cmd}
	case <-time.After(20 * time.Second):
		t.Fatal("pathlock-webdav did not start within 20 s")
	}
	return nil
}

// servePathlock: an instance on the suite's Redis, in namespace ns.
func servePathlock(t *testing.T, root, ns string) *instance {
	return serve(t, root, "--redis", redisURL, "--library", library, "--namespace", ns)
}

type reply struct {
	status int
	header http.Header
	body   string
}

var httpClient = &http.Client{Timeout: 20 * time.Second}

func do(t *testing.T, method, url string, header map[string]string, body string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func lockBody(owner string) string {
	return `<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope>` +
		`<D:locktype><D:write/></D:locktype><D:owner><D:href>` + owner + `</D:href></D:owner></D:lockinfo>`
}

// lock sends LOCK and returns the status and the Lock-Token (without <>).
func lock(t *testing.T, url, depth, timeout, owner string) (int, string) {
	t.Helper()
	r := do(t, "LOCK", url, map[string]string{"Depth": depth, "Timeout": timeout, "Content-Type": "application/xml"}, lockBody(owner))
	return r.status, strings.Trim(r.header.Get("Lock-Token"), "<>")
}

func lockdiscovery(t *testing.T, url string) string {
	t.Helper()
	r := do(t, "PROPFIND", url, map[string]string{"Depth": "0", "Content-Type": "application/xml"},
		`<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>`)
	if r.status != 207 {
		t.Fatalf("PROPFIND %s: %d %s", url, r.status, r.body)
	}
	return r.body
}

func TestTwoInstancesShareTheirLocks(t *testing.T) {
	root, ns := t.TempDir(), newNS()
	a, b := servePathlock(t, root, ns), servePathlock(t, root, ns)
	if r := do(t, "MKCOL", a.url+"/coll", nil, ""); r.status != 201 {
		t.Fatalf("MKCOL: %d", r.status)
	}
	status, token := lock(t, a.url+"/coll", "infinity", "Second-600", "alice")
	if status != 200 || token == "" {
		t.Fatalf("LOCK through a: %d %q", status, token)
	}
	if r := do(t, "PUT", b.url+"/coll/f.txt", nil, "x"); r.status != 423 {
		t.Errorf("PUT through b into a collection locked through a: %d, want 423", r.status)
	}
	if s, _ := lock(t, b.url+"/coll/f.txt", "0", "Second-600", "bob"); s != 423 {
		t.Errorf("LOCK through b inside the lock: %d, want 423", s)
	}
	for _, in := range []*instance{a, b} {
		d := lockdiscovery(t, in.url+"/coll")
		if !strings.Contains(d, "<D:href>alice</D:href>") || !strings.Contains(d, "<D:depth>infinity</D:depth>") {
			t.Errorf("lockdiscovery through %s: %s", in.url, d)
		}
	}
	// The holder, proven by the token, writes through either instance.
	if r := do(t, "PUT", b.url+"/coll/f.txt", map[string]string{"If": "(<" + token + ">)"}, "x"); r.status != 201 {
		t.Errorf("PUT through b with the token: %d", r.status)
	}
	if r := do(t, "UNLOCK", b.url+"/coll", map[string]string{"Lock-Token": "<" + token + ">"}, ""); r.status != 204 {
		t.Fatalf("UNLOCK through b: %d", r.status)
	}
	// (the standard handler answers every PUT with 201)
	if r := do(t, "PUT", a.url+"/coll/f.txt", nil, "y"); r.status != 201 {
		t.Errorf("PUT through a after the UNLOCK through b: %d", r.status)
	}
	if d := lockdiscovery(t, a.url+"/coll"); strings.Contains(d, "activelock") {
		t.Errorf("lockdiscovery after UNLOCK: %s", d)
	}
}

func TestALeaseEndsOnBothInstances(t *testing.T) {
	root, ns := t.TempDir(), newNS()
	a, b := servePathlock(t, root, ns), servePathlock(t, root, ns)
	if s, _ := lock(t, a.url+"/f.txt", "0", "Second-1", "carol"); s != 201 {
		t.Fatalf("LOCK (creating f.txt): %d", s)
	}
	if r := do(t, "PUT", b.url+"/f.txt", nil, "x"); r.status != 423 {
		t.Errorf("PUT through b: %d, want 423", r.status)
	}
	eventually(t, 5*time.Second, "the 1 s lease ends", func() bool {
		return !strings.Contains(lockdiscovery(t, a.url+"/f.txt"), "activelock")
	})
	if d := lockdiscovery(t, b.url+"/f.txt"); strings.Contains(d, "activelock") {
		t.Errorf("lockdiscovery through b after the lease: %s", d)
	}
	if r := do(t, "PUT", b.url+"/f.txt", nil, "x"); r.status != 201 {
		t.Errorf("PUT through b after the lease: %d", r.status)
	}
}
