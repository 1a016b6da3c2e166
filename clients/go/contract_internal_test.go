package pathlock

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const contractText = `{"protocol": "4.4",
 "keys": {"pattern": "pl:{NS}:<suffix>", "suffixes": ["meta", "wake"]},
 "waiting": {"recheck_ms": 100, "max_reservation_ms": 1000, "wake_margin_ms": 3},
 "functions": [
  {"name": "acquire", "keys": 9, "args": ["owner", "path..."], "optional": [["fair", "reserve_ms"], ["deadline_ms"]]},
  {"name": "info", "keys": 0, "args": [], "optional": []}]}`

// A contract's numbers, keys and argument names are what the client uses;
// one without "waiting" (before 4.4) gets the constants.
func TestContractParsed(t *testing.T) {
	k, err := parseContract([]byte(contractText))
	if err != nil {
		t.Fatal(err)
	}
	if want := (waitNumbers{100 * time.Millisecond, time.Second, 3 * time.Millisecond}); k.waiting != want {
		t.Errorf("waiting %+v, want %+v", k.waiting, want)
	}
	acquire, _ := k.function("acquire")
	info, _ := k.function("info")
	if got := k.keysOf(acquire, "n"); !reflect.DeepEqual(got, []string{"pl:{n}:meta", "pl:{n}:wake"}) {
		t.Errorf("keys %q", got)
	}
	if got := k.keysOf(info, "n"); got != nil {
		t.Errorf("info's keys %q", got)
	}
	if k.key("n", "wake") != "pl:{n}:wake" || k.key("n", "nope") != "" {
		t.Errorf("wake key %q", k.key("n", "wake"))
	}
	args, at, err := acquire.arguments(map[string]string{"owner": "o", "fair": "1", "reserve_ms": "0", "deadline_ms": ""},
		[]string{"/a", "/b"})
	if err != nil || !reflect.DeepEqual(args, []string{"o", "/a", "/b", "1", "0", ""}) || at["reserve_ms"] != 4 || at["deadline_ms"] != 5 {
		t.Errorf("arguments %q %v %v", args, at, err)
	}
	if _, _, err := acquire.arguments(map[string]string{"fair": "1"}, nil); err == nil || !strings.Contains(err.Error(), `"owner"`) {
		t.Errorf("a required argument without a value: %v", err)
	}
	// An optional group with a name this call has no value for (a newer
	// library's) ends the arguments before it.
	args, _, err = acquire.arguments(map[string]string{"owner": "o", "deadline_ms": ""}, []string{"/a"})
	if err != nil || !reflect.DeepEqual(args, []string{"o", "/a"}) {
		t.Errorf("an optional group without values: %q %v", args, err)
	}
	if _, err := k.function("nope"); err == nil {
		t.Error("a function the contract does not name")
	}
	old, err := parseContract([]byte(strings.Replace(contractText, `"waiting"`, `"not_waiting"`, 1)))
	if err != nil || old.waiting != preWaiting || preWaiting.Recheck != Recheck || preWaiting.MaxReservation != MaxReservation {
		t.Errorf("before 4.4: %+v %v", old, err)
	}
	for _, bad := range []string{`{`, `{"protocol": "4.4"}`, strings.Replace(contractText, "{NS}", "NS", 1),
		strings.Replace(contractText, `"recheck_ms": 100`, `"recheck_ms": 0`, 1)} {
		if _, err := parseContract([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// reserve_ms: the time left rounded up to whole ms, plus recheck, at most
// the longest reservation; 0 out of line or at the deadline.
func TestReserve(t *testing.T) {
	n := waitNumbers{Recheck: 200 * time.Millisecond, MaxReservation: 2 * time.Second}
	for left, want := range map[time.Duration]time.Duration{
		time.Microsecond: 201 * time.Millisecond, time.Millisecond: 201 * time.Millisecond,
		1500 * time.Microsecond: 202 * time.Millisecond, 1799 * time.Millisecond: 1999 * time.Millisecond,
		1800 * time.Millisecond: 2 * time.Second, time.Minute: 2 * time.Second, 0: 0, -time.Second: 0} {
		if got := n.reserve(left, true); got != want {
			t.Errorf("reserve(%v) = %v, want %v", left, got, want)
		}
	}
	if got := n.reserve(time.Second, false); got != 0 {
		t.Errorf("out of line: %v", got)
	}
}
