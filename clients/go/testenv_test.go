package pathlock_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
)

// testenv: servers from the one test launcher (tests/support/pathlock-testenv,
// tests/README.md; $PATHLOCK_TESTENV overrides its path): it picks free
// loopback ports (a Cluster's at most clusterPortMax, leaving room for the
// bus port), tries others when one was taken, waits until every server
// answers, and prints one JSON line, read here. Closing its stdin (stop)
// makes it stop its servers and remove their directory. Its error, when it
// cannot start them, is on stderr.
type testenv struct {
	Kind       string `json:"kind"`
	URL        string `json:"url"`
	Port       int    `json:"port"`
	Ports      []int  `json:"ports"`
	MasterName string `json:"master_name"`
	MasterPort int    `json:"master_port"`
	Servers    []struct {
		Name    string `json:"name"`
		Port    int    `json:"port"`
		TLSPort int    `json:"tls_port"`
		PID     int    `json:"pid"`
	} `json:"servers"`
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startTestenv: `pathlock-testenv kind options... -- args...`, once its
// servers answer.
func startTestenv(kind string, options []string, args ...string) (*testenv, error) {
	launcher := os.Getenv("PATHLOCK_TESTENV")
	if launcher == "" {
		launcher = repoFile("tests", "support", "pathlock-testenv")
	}
	cmd := exec.Command(launcher, append(append(append([]string{kind}, options...), "--"), args...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &testenv{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, e)
	}
	if err != nil {
		e.stop()
		return nil, fmt.Errorf("pathlock-testenv %s did not start its servers (see stderr): %v", kind, err)
	}
	return e, nil
}

// stop closes the launcher's stdin and waits until it has stopped everything.
func (e *testenv) stop() {
	e.stdin.Close()
	_ = e.cmd.Wait()
}

// serveTestenv: startTestenv for one test, which fails at once when the
// servers do not start and stops them when the test ends.
func serveTestenv(t *testing.T, kind string, options []string, args ...string) *testenv {
	t.Helper()
	e, err := startTestenv(kind, options, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
	return e
}
