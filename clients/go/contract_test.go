package pathlock_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"pathlock.dev/pathlock"
)

// theContract: the library's contract as the server answers it, read here
// without the client's code.
type theContract struct {
	Keys struct {
		Pattern  string   `json:"pattern"`
		Suffixes []string `json:"suffixes"`
	} `json:"keys"`
	Functions []struct {
		Name     string     `json:"name"`
		Args     []string   `json:"args"`
		Optional [][]string `json:"optional"`
	} `json:"functions"`
	Waiting *struct {
		RecheckMs        int64 `json:"recheck_ms"`
		MaxReservationMs int64 `json:"max_reservation_ms"`
	} `json:"waiting"`
}

// contractJSON: the text of the library's contract, called without the client's code.
func contractJSON(t *testing.T, c *pathlock.Client) []byte {
	t.Helper()
	conn, err := redis.Dial("tcp", redisAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	prefix := "pl_v4_" + strings.TrimPrefix(c.LibraryName(), "pathlock_v4_") + "_"
	r, err := redis.Values(conn.Do("FCALL_RO", prefix+"contract", 0))
	if err != nil || len(r) != 2 {
		t.Fatalf("contract: %v %v", r, err)
	}
	return r[1].([]byte)
}

func readContract(t *testing.T, c *pathlock.Client) theContract {
	t.Helper()
	var k theContract
	if err := json.Unmarshal(contractJSON(t, c), &k); err != nil {
		t.Fatal(err)
	}
	return k
}

// contractKeys: the keys of namespace ns by the contract's pattern and suffixes.
func contractKeys(k theContract, ns string) []string {
	var keys []string
	for _, s := range k.Keys.Suffixes {
		keys = append(keys, strings.Replace(strings.Replace(k.Keys.Pattern, "{NS}", "{"+ns+"}", 1), "<suffix>", s, 1))
	}
	return keys
}

// acquireNames: acquire's argument names, then every optional group.
func acquireNames(k theContract) []string {
	var names []string
	for _, f := range k.Functions {
		if f.Name == "acquire" {
			names = append(names, f.Args...)
			for _, g := range f.Optional {
				names = append(names, g...)
			}
		}
	}
	return names
}

// checkReservations: the client's one reservation rule against the waiting numbers.
func checkReservations(t *testing.T, c *pathlock.Client, ns string, recheck, most int64) {
	t.Helper()
	ctx := context.Background()
	for left, want := range map[int64]int64{1: 1 + recheck, 150: 150 + recheck, most - recheck - 1: most - 1,
		most - recheck: most, most - recheck + 1: most, 60000: most, 0: 0} {
		got, err := c.Reservation(ctx, ns, time.Duration(left)*time.Millisecond)
		if err != nil || got != time.Duration(want)*time.Millisecond {
			t.Errorf("reservation with %d ms left: %v %v, want %d ms", left, got, err, want)
		}
	}
	// Rounded up: 1 µs left is 1 ms.
	if got, _ := c.Reservation(ctx, ns, time.Microsecond); got != time.Duration(1+recheck)*time.Millisecond {
		t.Errorf("reservation with 1 µs left: %v", got)
	}
}

// What Acquire sends is what the contract names: the keys from its pattern
// and suffixes, acquire's arguments by name with every optional group, and
// reserve_ms by its waiting numbers (200 and 2000 before protocol 4.4).
func TestAcquireWireFollowsTheContract(t *testing.T) {
	c := newClient(t)
	k := readContract(t, c)
	ns := newNS(t)
	ctx := context.Background()
	keys := contractKeys(k, ns)
	recheck, most := int64(200), int64(2000)
	if k.Waiting != nil {
		recheck, most = k.Waiting.RecheckMs, k.Waiting.MaxReservationMs
	}
	// The constants say what the library says (and stand for it before 4.4).
	if recheck != pathlock.Recheck.Milliseconds() || most != pathlock.MaxReservation.Milliseconds() {
		t.Errorf("waiting: the library has %d and %d ms, the constants %v and %v", recheck, most,
			pathlock.Recheck, pathlock.MaxReservation)
	}
	names := acquireNames(k)
	ids := pathlock.WireIDs{ID: "kit-id", Token: "kit-token", Waiter: "kit-waiter"}
	for _, tc := range []struct {
		wait    time.Duration
		unfair  bool
		waiter  string
		reserve int64
	}{{0, false, "", 0}, {150 * time.Millisecond, false, "kit-waiter", 150 + recheck}, {time.Minute, false, "kit-waiter", most},
		{time.Minute, true, "", 0}} {
		req := pathlock.Request{Namespace: ns, Owner: "o", Op: "move_file", Paths: []string{"/a", "/b"}, TTL: time.Second,
			Wait: tc.wait, Unfair: tc.unfair}
		w, err := c.AcquireWire(ctx, req, ids)
		if err != nil {
			t.Fatal(err)
		}
		fair := "1"
		if tc.unfair {
			fair = "0"
		}
		values := map[string]string{"owner": "o", "op": "move_file", "ttl_ms": "1000", "new_id": "kit-id", "new_token": "kit-token",
			"fair": fair, "waiter_id": tc.waiter, "reserve_ms": strconv.FormatInt(tc.reserve, 10)}
		var want []string
		for _, n := range names {
			if n == "path..." {
				want = append(want, "/a", "/b")
			} else {
				want = append(want, values[n]) // "" for the others: no reentry, key, deadline or default
			}
		}
		if !reflect.DeepEqual(w.Keys, keys) || !reflect.DeepEqual(w.Args, want) {
			t.Errorf("wait %v unfair %v:\n keys %q\n want %q\n args %q\n want %q", tc.wait, tc.unfair, w.Keys, keys, w.Args, want)
		}
	}
	checkReservations(t, c, ns, recheck, most)
}
