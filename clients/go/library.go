package pathlock

import (
	"embed"
	"errors"
	"io/fs"
)

// The shipped matrix's Functions library, in library/pathlock_library.lua
// of a released module (tools/release/go.sh puts it there); the pathlock
// sources hold only library/README.md.
//
//go:embed library
var shippedLibrary embed.FS

// ErrNoDefaultLibrary is DefaultLibrary's error in a copy of the module
// that carries no library: the pathlock sources, not a release.
var ErrNoDefaultLibrary = errors.New("pathlock: this copy of the module carries no Functions library " +
	"(a release does, from tools/release/go.sh); set Options.LibraryFile to pathlock_library.lua")

// DefaultLibrary returns the text of the Functions library of the shipped
// matrix (cloud-drive) that the released module carries, for
// Options.LibraryCode: New loads it where it is missing (never with
// REPLACE; a different text under its name is refused). For a matrix of
// your own, give its .lua with Options.LibraryFile instead.
func DefaultLibrary() (string, error) {
	code, err := fs.ReadFile(shippedLibrary, "library/pathlock_library.lua")
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoDefaultLibrary
	}
	if err != nil {
		return "", err
	}
	return string(code), nil
}
