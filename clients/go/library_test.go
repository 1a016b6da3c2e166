package pathlock_test

import (
	"errors"
	"strings"
	"testing"

	"pathlock.dev/pathlock"
)

// The pathlock sources carry no library (the C++ build writes it, and
// tools/release/go.sh puts it into the released module, where
// tests/release/test_consumer_go.py runs the example with it): here
// DefaultLibrary says so, with an error that tells what to set.
func TestDefaultLibraryOfTheSources(t *testing.T) {
	code, err := pathlock.DefaultLibrary()
	if !errors.Is(err, pathlock.ErrNoDefaultLibrary) || code != "" {
		t.Fatalf("DefaultLibrary() = %d bytes, %v; want ErrNoDefaultLibrary", len(code), err)
	}
	if !strings.Contains(err.Error(), "Options.LibraryFile") {
		t.Fatalf("the error does not say what to set: %v", err)
	}
}
