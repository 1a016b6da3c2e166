package pathlock

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// parseURL's forms and refusals (docs/go.md: the same URLs as the C++
// engine's redis_url.hpp).
func TestParseURL(t *testing.T) {
	good := map[string]endpoint{
		"redis://h:1":                       {addrs: []string{"h:1"}},
		"rediss://u:p%40@h,[::1]/3":         {addrs: []string{"h:6379", "[::1]:6379"}, tls: true, user: "u", password: "p@", db: 3},
		"redis://secret@h:1/":               {addrs: []string{"h:1"}, password: "secret"},
		"redis-sentinel://s1,s2:5#mymaster": {addrs: []string{"s1:26379", "s2:5"}, sentinel: "mymaster"},
		"rediss-sentinel://a:b@s1/2#m":      {addrs: []string{"s1:26379"}, sentinel: "m", tls: true, user: "a", password: "b", db: 2},
	}
	for raw, want := range good {
		got, err := parseURL(raw)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseURL(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	bad := map[string]string{
		"h:1":                  "expected redis[s]://",
		"http://h:1":           "the scheme must be",
		"redis://h:1?x=1":      "query strings",
		"redis://h:1#m":        "only for a sentinel url",
		"redis-sentinel://s1":  "needs the master name",
		"redis-sentinel://s1#": "needs the master name",
		"redis://%zz:p@h":      "bad user",
		"redis://u:%zz@h":      "bad password",
		"redis://h/x":          "bad database",
		"redis://h,,g":         "empty host",
	}
	for raw, words := range bad {
		_, err := parseURL(raw)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), words) {
			t.Errorf("parseURL(%q) = %v; want ErrInvalid saying %q", raw, err, words)
		}
	}
}
