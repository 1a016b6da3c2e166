package webdav

import (
	"embed"
	"errors"
	"io/fs"
)

// The Functions library of matrix/webdav.json, in
// library/pathlock_library.lua of a released module (tools/release/go.sh
// puts it there); the sources hold only library/README.md.
//
//go:embed library
var webdavLibrary embed.FS

// ErrNoLibrary is Library's error in a copy of the module that carries no
// library: the pathlock sources, not a release.
var ErrNoLibrary = errors.New("pathlock webdav: this copy of the module carries no Functions library " +
	"(a release does, from tools/release/go.sh); give the pathlock_library.lua of matrix/webdav.json " +
	"(build/pathlock_matrix/pathlock_webdav/redis/) with --library or pathlock.Options.LibraryFile")

// Library returns the text of the Functions library of matrix/webdav.json
// that the released module carries, for pathlock.Options.LibraryCode.
func Library() (string, error) {
	code, err := fs.ReadFile(webdavLibrary, "library/pathlock_library.lua")
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoLibrary
	}
	if err != nil {
		return "", err
	}
	return string(code), nil
}
