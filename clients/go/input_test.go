package pathlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"pathlock.dev/pathlock"
)

// Owners and proofs follow the engine's rules (src/core/request.cpp): a bad
// one is refused with ErrInvalid and the engine's wording before anything is
// sent; every edge that is allowed is granted.
func TestInputRulesEqualTheEngine(t *testing.T) {
	c := newClient(t)
	ns := newNS(t)
	bg := context.Background()
	refused := map[string]string{
		"f\x01z":                       "owner has control character 0x01 at byte 1",
		"a\x7f":                        "owner has control character 0x7F at byte 1",
		"tab\there":                    "owner has control character 0x09 at byte 3",
		"\xff":                         "owner has invalid UTF-8 at byte 0",
		"ok\xed\xa0\x80":               "owner has invalid UTF-8 at byte 2", // a UTF-16 surrogate
		"\xc0\xaf":                     "owner has invalid UTF-8 at byte 0", // overlong
		strings.Repeat("a", 257):       "owner is 257 bytes; the limit is 256",
		"":                             "owner is empty",
		strings.Repeat("é", 128) + "x": "owner is 257 bytes; the limit is 256",
	}
	for owner, want := range refused {
		_, err := c.Acquire(bg, pathlock.Request{Namespace: ns, Owner: owner, Op: "upload", Paths: []string{"/o"}})
		var inv *pathlock.InvalidError
		if !errors.As(err, &inv) || inv.Message != want {
			t.Errorf("owner %q: want invalid %q, got %v", owner, want, err)
		}
		if pathlock.CheckOwner(owner) == nil {
			t.Errorf("CheckOwner(%q) accepted it", owner)
		}
	}
	for i, owner := range []string{strings.Repeat("a", 256), strings.Repeat("é", 128), "svc\u0085x", "日本語 owner", "~!@"} {
		path := "/o/" + string(rune('a'+i))
		if _, err := c.Acquire(bg, pathlock.Request{Namespace: ns, Owner: owner, Op: "upload", Paths: []string{path}}); err != nil {
			t.Fatalf("owner %q: %v", owner, err)
		}
		locks, err := c.ListAll(bg, ns, path)
		if err != nil || len(locks) != 1 || locks[0].Owner != owner {
			t.Fatalf("owner %q read back as %+v %v", owner, locks, err)
		}
	}
	bad := []pathlock.Proof{{ID: "x y", Token: "t"}, {ID: strings.Repeat("a", 65), Token: "t"}, {ID: "a", Token: strings.Repeat("t", 257)}, {ID: "a"}}
	for _, p := range bad {
		_, err := c.Acquire(bg, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/o/a"}, Reenter: p})
		if !errors.Is(err, pathlock.ErrInvalid) {
			t.Errorf("reentry proof %q/%d bytes: want ErrInvalid, got %v", p.ID, len(p.Token), err)
		}
	}
	for _, key := range []string{"k y", strings.Repeat("k", 129), "ké"} {
		_, err := c.Acquire(bg, pathlock.Request{Namespace: ns, Owner: "a", Op: "upload", Paths: []string{"/o/k"}, IdempotencyKey: key})
		if !errors.Is(err, pathlock.ErrInvalid) {
			t.Errorf("idempotency key %q: want ErrInvalid, got %v", key, err)
		}
	}
	for _, bad := range []string{"", "a b", strings.Repeat("n", 129), "{x}"} {
		if _, err := c.Acquire(bg, pathlock.Request{Namespace: bad, Owner: "a", Op: "upload", Paths: []string{"/o"}}); !errors.Is(err, pathlock.ErrInvalid) {
			t.Errorf("namespace %q: want ErrInvalid, got %v", bad, err)
		}
	}
}

// The client's limits are the library's: its read-only contract function
// (docs/lua-protocol.md#contract-read-only) names them.
func TestLimitsEqualTheContract(t *testing.T) {
	c := newClient(t)
	var contract struct {
		Limits map[string]interface{} `json:"limits"` // numbers, and since 4.3 a key's name
	}
	if err := json.Unmarshal(contractJSON(t, c), &contract); err != nil {
		t.Fatal(err)
	}
	if k := contract.Limits["default_limits_key"]; k != pathlock.DefaultLimitsKey {
		t.Errorf("default_limits_key: the client has %q, the contract %v", pathlock.DefaultLimitsKey, k)
	}
	mine := map[string]int64{
		"owner_bytes":               pathlock.MaxOwnerBytes,
		"id_chars":                  pathlock.MaxIDChars,
		"token_bytes":               pathlock.MaxTokenBytes,
		"ttl_ms":                    pathlock.MaxTTL.Milliseconds(),
		"reserve_ms":                pathlock.MaxReservation.Milliseconds(),
		"path_bytes":                pathlock.MaxPathBytes,
		"component_bytes":           pathlock.MaxComponentBytes,
		"idempotency_key_chars":     128, // keyRE
		"namespace_bytes":           128, // CheckNamespace
		"limit_max":                 pathlock.MaxLimit,
		"default_limits_refresh_ms": pathlock.DefaultLimitsRefresh.Milliseconds(),
	}
	for name, v := range mine {
		if got, ok := contract.Limits[name].(float64); !ok || int64(got) != v {
			t.Errorf("limit %s: the client has %d, the contract %v", name, v, contract.Limits[name])
		}
	}
	if err := pathlock.CheckNamespace(strings.Repeat("n", 128)); err != nil {
		t.Errorf("a namespace of 128 bytes: %v", err)
	}
	key := strings.Repeat("k", 128)
	if _, err := c.Acquire(context.Background(), pathlock.Request{Namespace: newNS(t), Owner: "a", Op: "upload", Paths: []string{"/k"}, IdempotencyKey: key}); err != nil {
		t.Errorf("a key of 128 characters: %v", err)
	}
}
