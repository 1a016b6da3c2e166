package webdav_test

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

var summaryRE = regexp.MustCompile("<- summary for `([a-z]+)': of ([0-9]+) tests run: ([0-9]+) passed, ([0-9]+) failed")

// litmus runs Debian's litmus (LITMUS, default litmus) groups basic,
// copymove, props and locks against url and returns the passes per group.
func litmus(t *testing.T, url string) (map[string]int, string) {
	t.Helper()
	bin := os.Getenv("LITMUS")
	if bin == "" {
		bin = "litmus"
	}
	cmd := exec.Command(bin, "--keep-going", url+"/")
	cmd.Env = append(os.Environ(), "TESTS=basic copymove props locks")
	cmd.Dir = t.TempDir()          // litmus writes debug.log and child.log there
	out, _ := cmd.CombinedOutput() // failing tests make its status non-zero
	passed := map[string]int{}
	for _, m := range summaryRE.FindAllStringSubmatch(string(out), -1) {
		passed[m[1]], _ = strconv.Atoi(m[3])
	}
	if len(passed) != 4 {
		t.Fatalf("litmus against %s: %d group summaries in\n%s", url, len(passed), out)
	}
	return passed, string(out)
}

// The program passes at least as many of litmus's tests as the same handler
// with its in-memory lock system, group by group, measured in one run.
func TestLitmusAtLeastAsManyPassesAsMemLS(t *testing.T) {
	memory := serve(t, t.TempDir(), "--locks", "memory")
	mine := servePathlock(t, t.TempDir(), newNS())
	memPassed, _ := litmus(t, memory.url)
	plPassed, plOut := litmus(t, mine.url)
	total := func(m map[string]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	t.Logf("litmus passes: pathlock %v (%d), webdav.NewMemLS %v (%d)", plPassed, total(plPassed), memPassed, total(memPassed))
	// The shared-lock tests run (SharedLocks) and pass with pathlock.
	for _, name := range []string{"lock_shared", "double_sharedlock"} {
		if !regexp.MustCompile(name + `\.+ pass`).MatchString(plOut) {
			t.Errorf("litmus %s did not pass with pathlock:\n%s", name, plOut)
		}
	}
	for group, n := range memPassed {
		if plPassed[group] < n {
			t.Errorf("litmus %s: %d passes with pathlock, %d with webdav.NewMemLS\n%s", group, plPassed[group], n, plOut)
		}
	}
}
