package pathlock

import (
	"strings"
	"unicode/utf8"
)

// Limits of paths (docs/design.md "Paths").
const (
	MaxComponentBytes = 255
	MaxPathBytes      = 4096
)

// NormalizePath returns the canonical form of a lock path, as pathlock's
// normalize_path makes it: absolute, single slashes, no trailing slash
// (except the root). It refuses (ErrInvalid) relative or empty paths, "." and
// ".." components, control characters, malformed UTF-8, components over 255
// bytes and paths over 4096 bytes.
func NormalizePath(p string) (string, error) {
	if p == "" {
		return "", invalidf("empty path")
	}
	if len(p) > MaxPathBytes {
		return "", invalidf("path is longer than %d bytes", MaxPathBytes)
	}
	if p[0] != '/' {
		return "", invalidf("path %q is not absolute", p)
	}
	if !utf8.ValidString(p) {
		return "", invalidf("path %q is not valid UTF-8", p)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f {
			return "", invalidf("path %q holds a control character", p)
		}
	}
	var b strings.Builder
	b.Grow(len(p))
	for _, c := range strings.Split(p, "/") {
		if c == "" {
			continue
		}
		if c == "." || c == ".." {
			return "", invalidf("path %q has a %q component", p, c)
		}
		if len(c) > MaxComponentBytes {
			return "", invalidf("path %q has a component longer than %d bytes", p, MaxComponentBytes)
		}
		b.WriteByte('/')
		b.WriteString(c)
	}
	out := b.String()
	if out == "" {
		out = "/"
	}
	if len(out) > MaxPathBytes {
		return "", invalidf("path is longer than %d bytes", MaxPathBytes)
	}
	return out, nil
}
