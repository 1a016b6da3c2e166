package pathlock

// The input rules of the engine (src/core/request.cpp, docs/lua-protocol.md
// "limits" of the contract), checked before anything is sent, with the
// engine's wording: every client refuses the same owners, ids, tokens, keys
// and namespaces, so a lock any of them wrote reads in every other.

import (
	"fmt"
	"regexp"
	"unicode/utf8"
)

// Limits of the contract (docs/lua-protocol.md#contract-read-only).
const (
	MaxOwnerBytes = 256 // owner_bytes
	MaxIDChars    = 64  // id_chars: lock ids are [A-Za-z0-9-]
	MaxTokenBytes = 256 // token_bytes
)

var lockIDRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// textProblem: why s is not acceptable text (a control character below
// 0x20 or 0x7F, or UTF-8 that is not well-formed), or "".
func textProblem(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return fmt.Sprintf("control character 0x%02X at byte %d", c, i)
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Sprintf("invalid UTF-8 at byte %d", i)
		}
		i += n
	}
	return ""
}

// CheckOwner refuses (ErrInvalid) an owner that is empty, over 256 bytes,
// holds a control character or is not well-formed UTF-8: the engine's rule.
func CheckOwner(owner string) error {
	switch {
	case owner == "":
		return invalidf("owner is empty")
	case len(owner) > MaxOwnerBytes:
		return invalidf("owner is %d bytes; the limit is %d", len(owner), MaxOwnerBytes)
	}
	if p := textProblem(owner); p != "" {
		return invalidf("owner has %s", p)
	}
	return nil
}

// checkProof: a reentry's id (1..64 of [A-Za-z0-9-]) and token (1..256 bytes).
func checkProof(p Proof) error {
	if !lockIDRE.MatchString(p.ID) {
		return invalidf("reenter_id must be 1..%d characters of [A-Za-z0-9-]", MaxIDChars)
	}
	if p.Token == "" || len(p.Token) > MaxTokenBytes {
		return invalidf("reenter_token must be 1..%d bytes", MaxTokenBytes)
	}
	return nil
}
