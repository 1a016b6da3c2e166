package webdav_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	plwebdav "pathlock.dev/pathlock/webdav"
)

// The sources carry no library, and Library says so, naming what to give
// instead; a released module (tools/release/go.sh) carries the library of
// matrix/webdav.json (tests/release/test_consumer_webdav.py runs the
// released program without --library).
func TestLibrary(t *testing.T) {
	code, err := plwebdav.Library()
	if _, statErr := os.Stat("library/pathlock_library.lua"); statErr == nil {
		if err != nil || !strings.HasPrefix(code, "#!lua name=pathlock_v4_") {
			t.Fatalf("a released module: Library() = %.40q, %v", code, err)
		}
		return
	}
	if !errors.Is(err, plwebdav.ErrNoLibrary) || code != "" {
		t.Fatalf("Library() = %d bytes, %v; want ErrNoLibrary in the sources", len(code), err)
	}
	if !strings.Contains(err.Error(), "--library") {
		t.Errorf("ErrNoLibrary does not say what to give: %v", err)
	}
}
