package webdav_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// WebDAV clients an operator would point at pathlock-webdav (Debian's
// rclone and cadaver), driven against the program on the suite's Redis;
// the files they leave on disk are checked. A test skips, saying so, only
// when its client is not installed (tools/build.sh installs both).

// tool returns the path of a client program, or skips the test.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (apt-get install %s): this test drives it against pathlock-webdav", name, pkg)
	}
	return p
}

// writeFile writes text at root/rel, making its folders.
func writeFile(t *testing.T, root, rel, text string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// onDisk returns the content of root/rel, or "<absent>".
func onDisk(root, rel string) string {
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return "<absent>"
	}
	return string(b)
}

// rclone runs rclone on an on-the-fly ":webdav:" remote at in's URL, with a
// config file of the test's own (empty: the remote is in the flags), one try
// per request, at most 60 s.
func rclone(t *testing.T, bin string, in *instance, dir string, args ...string) (string, error) {
	t.Helper()
	config := filepath.Join(dir, "rclone.conf")
	if err := os.WriteFile(config, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	all := append([]string{"--config", config, "--webdav-url", in.url,
		"--webdav-vendor", "other", "--retries", "1", "--low-level-retries", "1", "--contimeout", "10s",
		"--timeout", "20s"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, all...).CombinedOutput()
	return string(out), err
}

func TestRcloneCopiesListsMovesAndDeletes(t *testing.T) {
	bin := tool(t, "rclone", "rclone")
	root, local, work := t.TempDir(), t.TempDir(), t.TempDir()
	in := servePathlock(t, root, newNS())
	writeFile(t, local, "a.txt", "alpha")
	writeFile(t, local, "sub/b.txt", "beta")
	writeFile(t, local, "sub/deeper/c.txt", "gamma")
	must := func(args ...string) string {
		t.Helper()
		out, err := rclone(t, bin, in, work, args...)
		if err != nil {
			t.Fatalf("rclone %v: %v\n%s", args, err, out)
		}
		return out
	}
	must("copy", local, ":webdav:up")
	for rel, want := range map[string]string{"up/a.txt": "alpha", "up/sub/b.txt": "beta", "up/sub/deeper/c.txt": "gamma"} {
		if got := onDisk(root, rel); got != want {
			t.Errorf("after rclone copy, %s holds %q, want %q", rel, got, want)
		}
	}
	listed := strings.Fields(must("lsf", "-R", ":webdav:up"))
	if strings.Join(listed, " ") != "a.txt sub/ sub/b.txt sub/deeper/ sub/deeper/c.txt" {
		t.Errorf("rclone lsf -R: %q", listed)
	}
	must("moveto", ":webdav:up/a.txt", ":webdav:up/sub/moved.txt")
	if onDisk(root, "up/a.txt") != "<absent>" || onDisk(root, "up/sub/moved.txt") != "alpha" {
		t.Errorf("after rclone moveto: a.txt %q, sub/moved.txt %q", onDisk(root, "up/a.txt"), onDisk(root, "up/sub/moved.txt"))
	}
	must("deletefile", ":webdav:up/sub/b.txt")
	must("purge", ":webdav:up/sub/deeper")
	if _, err := os.Stat(filepath.Join(root, "up/sub/deeper")); !os.IsNotExist(err) || onDisk(root, "up/sub/b.txt") != "<absent>" {
		t.Errorf("after rclone deletefile and purge: sub/deeper %v, sub/b.txt %q", err, onDisk(root, "up/sub/b.txt"))
	}
	if listed := strings.Fields(must("lsf", "-R", ":webdav:up")); strings.Join(listed, " ") != "sub/ sub/moved.txt" {
		t.Errorf("rclone lsf -R at the end: %q", listed)
	}
}

// cadaverSession is one interactive cadaver on pipes (stdbuf makes its
// output line-buffered), so that a test can act between its commands.
type cadaverSession struct {
	in    *os.File
	lines chan string
}

// startCadaver opens url in cadaver, working in dir with HOME=dir (no
// .cadaverrc or .netrc of the user's); the test ends it.
func startCadaver(t *testing.T, bin, url, dir string) *cadaverSession {
	t.Helper()
	cmd := exec.Command("stdbuf", "-oL", "-eL", bin, url)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = r
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	s := &cadaverSession{in: w, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() { w.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return s
}

// run sends one command and waits (at most 20 s) for the line of its
// outcome, which must contain want.
func (s *cadaverSession) run(t *testing.T, command, want string) {
	t.Helper()
	if _, err := s.in.WriteString(command + "\n"); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				t.Fatalf("cadaver exited during %q", command)
			}
			if strings.Contains(line, want) {
				return
			}
			if strings.Contains(line, "failed") {
				t.Fatalf("cadaver %q: %s", command, line)
			}
		case <-timeout:
			t.Fatalf("cadaver %q: no %q within 20 s", command, want)
		}
	}
}

// A file put and locked with cadaver: a PUT without its token (plain HTTP,
// and rclone when installed) is refused with 423 while the lock is held and
// the file keeps its content; after cadaver's unlock, both write it.
func TestCadaverLockRefusesOtherClients(t *testing.T) {
	bin := tool(t, "cadaver", "cadaver")
	root, local := t.TempDir(), t.TempDir()
	in := servePathlock(t, root, newNS())
	writeFile(t, local, "notes.txt", "from cadaver")
	s := startCadaver(t, bin, in.url+"/", local)
	s.run(t, "put notes.txt", "Uploading notes.txt to `/notes.txt': ")
	if got := onDisk(root, "notes.txt"); got != "from cadaver" {
		t.Fatalf("after cadaver's put, notes.txt holds %q", got)
	}
	s.run(t, "lock notes.txt", "Locking `notes.txt': succeeded.")
	if r := do(t, "PUT", in.url+"/notes.txt", nil, "intruder"); r.status != 423 {
		t.Errorf("a PUT without the token while cadaver holds the lock: %d, want 423", r.status)
	}
	writeFile(t, local, "other.txt", "from rclone")
	rcl, haveRclone := exec.LookPath("rclone")
	if haveRclone == nil {
		out, err := rclone(t, rcl, in, local, "copyto", filepath.Join(local, "other.txt"), ":webdav:notes.txt")
		if err == nil || !strings.Contains(out, "423 Locked") {
			t.Errorf("rclone copyto onto cadaver's locked file: %v, want a 423 refusal\n%s", err, out)
		}
	}
	if got := onDisk(root, "notes.txt"); got != "from cadaver" {
		t.Errorf("while locked, notes.txt became %q", got)
	}
	s.run(t, "unlock notes.txt", "Unlocking `notes.txt': succeeded.")
	s.run(t, "get notes.txt got.txt", "Downloading `/notes.txt' to got.txt")
	if got := onDisk(local, "got.txt"); got != "from cadaver" {
		t.Errorf("cadaver's get wrote %q", got)
	}
	if r := do(t, "PUT", in.url+"/notes.txt", nil, "after unlock"); r.status != 201 {
		t.Errorf("a PUT after cadaver's unlock: %d, want 201", r.status)
	}
	if haveRclone == nil {
		if out, err := rclone(t, rcl, in, local, "copyto", filepath.Join(local, "other.txt"), ":webdav:notes.txt"); err != nil {
			t.Errorf("rclone copyto after the unlock: %v\n%s", err, out)
		} else if got := onDisk(root, "notes.txt"); got != "from rclone" {
			t.Errorf("after rclone's copy, notes.txt holds %q", got)
		}
	}
	s.run(t, "quit", "closed")
}
