package pathlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Version is this client's version.
const Version = "1.0.0"

// Options configure a Client. Only URL is required.
type Options struct {
	// URL: redis://[user:password@]host:port[/db], rediss:// for TLS,
	// several comma-separated host:port for a Cluster, or
	// redis[s]-sentinel://host:port[,host:port...][/db]#MASTER.
	URL string
	// Topology: Auto (the default) finds out.
	Topology Topology
	// TLSConfig for rediss:// (nil: the system's roots, TLS 1.2 or later).
	// Setting it turns TLS on for a redis:// URL too.
	TLSConfig *tls.Config

	// The Functions library, in order of preference:
	// LibraryCode: the text of pathlock_library.lua; it is loaded (FUNCTION
	// LOAD, never REPLACE) on every master by LoadLibrary, and on a server
	// that answers "Function not found", and the call is sent again.
	LibraryCode string
	// LibraryFile: a file holding that text.
	LibraryFile string
	// LibraryName: "pathlock_v4_<H>", a library already loaded.
	LibraryName string
	// With none of them, New looks for the one pathlock_v4_ library loaded
	// on the server (FUNCTION LIST) and fails if there is none or several.

	// DialTimeout for new connections (default 5 s); ReadTimeout for each
	// reply (default 10 s).
	DialTimeout time.Duration
	ReadTimeout time.Duration
	// PoolSize: idle connections kept per server (default 8).
	PoolSize int
	// MaxConns: the most command connections open at once per server
	// (default 64; the wake-up subscription is not counted). A call that
	// finds them all busy fails at once with ErrPoolExhausted; nothing was
	// sent.
	MaxConns int

	// Warn gets the client's warnings: for now one, when the user may not
	// read the default limits (GET pl:limits; then none apply to its
	// requests). Default: the standard logger (log.Print).
	Warn func(message string)
}

// Client is a connection to one Redis deployment and one pathlock library.
// It is safe for concurrent use. Close it when done.
type Client struct {
	be      backend
	name    string // library name, pathlock_v4_<H>
	prefix  string // function prefix, pl_v4_<H>_
	code    string // library text, when given
	loadMu  sync.Mutex
	closeMu sync.RWMutex
	closed  bool
	// readTimeout: the longest wait for a reply (Options.ReadTimeout).
	readTimeout time.Duration
	maxConns    int
	clock       serverClock
	wake        wakeHub
	// afterAttempt, for tests: called after each attempt of a wait.
	afterAttempt func(granted bool)
	// defaults: the default limits as last read (limits.go).
	defaults defaultLimits
	// recheck, for tests: the longest sleep of a wait between attempts
	// (0: the contract's recheck_ms). A test that sets it beyond its wait proves that a grant
	// came through the wake-up channel.
	recheck time.Duration
	// contractCache: the library's contract (contract.go).
	contractCache contractCache
}

var libraryNameRE = regexp.MustCompile(`^pathlock_v4_[0-9a-f]{16}$`)

// LibraryNameOf reads the library name from the first line of a library
// text (#!lua name=pathlock_v4_<H>).
func LibraryNameOf(code string) (string, error) {
	line := code
	if i := strings.IndexByte(code, '\n'); i >= 0 {
		line = code[:i]
	}
	const head = "#!lua name="
	if !strings.HasPrefix(line, head) {
		return "", invalidf("the library text does not start with %q", head)
	}
	name := strings.TrimSpace(strings.Fields(line[len(head):] + " ")[0])
	if !libraryNameRE.MatchString(name) {
		return "", invalidf("library name %q is not pathlock_v4_<16 hex digits>", name)
	}
	return name, nil
}

func prefixOf(name string) string {
	return "pl_v4_" + strings.TrimPrefix(name, "pathlock_v4_") + "_"
}

// New connects to Redis and settles which library to call. ctx bounds the
// connection and discovery.
func New(ctx context.Context, o Options) (*Client, error) {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 10 * time.Second
	}
	if o.PoolSize <= 0 {
		o.PoolSize = 8
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 64
	}
	c := &Client{code: o.LibraryCode, readTimeout: o.ReadTimeout, maxConns: o.MaxConns}
	c.defaults.warn = o.Warn
	if c.code == "" && o.LibraryFile != "" {
		b, err := os.ReadFile(o.LibraryFile)
		if err != nil {
			return nil, invalidf("library file: %v", err)
		}
		c.code = string(b)
	}
	switch {
	case c.code != "":
		name, err := LibraryNameOf(c.code)
		if err != nil {
			return nil, err
		}
		if o.LibraryName != "" && o.LibraryName != name {
			return nil, invalidf("LibraryName %q but the library text is %q", o.LibraryName, name)
		}
		c.name = name
	case o.LibraryName != "":
		if !libraryNameRE.MatchString(o.LibraryName) {
			return nil, invalidf("library name %q is not pathlock_v4_<16 hex digits>", o.LibraryName)
		}
		c.name = o.LibraryName
	}
	ep, err := parseURL(o.URL)
	if err != nil {
		return nil, err
	}
	be, err := newBackend(ctx, ep, &o)
	if err != nil {
		return nil, err
	}
	c.be = be
	if c.name == "" {
		if c.name, err = c.discover(ctx); err != nil {
			be.close()
			return nil, err
		}
	}
	c.prefix = prefixOf(c.name)
	return c, nil
}

// discover finds the one pathlock_v4_ library loaded on the server.
func (c *Client) discover(ctx context.Context) (string, error) {
	addrs, err := c.be.masters(ctx)
	if err != nil {
		return "", &BackendError{Op: "discover", Err: err}
	}
	found := map[string]bool{}
	for _, a := range addrs {
		conn, err := c.be.dialAddr(ctx, a)
		if err != nil {
			return "", &BackendError{Op: "discover", Err: err}
		}
		libs, err := redis.Values(conn.Do("FUNCTION", "LIST", "LIBRARYNAME", "pathlock_v4_*"))
		conn.Close()
		if err != nil {
			return "", &BackendError{Op: "FUNCTION LIST", Err: err}
		}
		for _, l := range libs {
			fields, _ := redis.Values(l, nil)
			for i := 0; i+1 < len(fields); i += 2 {
				if k, _ := redis.String(fields[i], nil); k == "library_name" {
					if n, _ := redis.String(fields[i+1], nil); libraryNameRE.MatchString(n) {
						found[n] = true
					}
				}
			}
		}
	}
	names := make([]string, 0, len(found))
	for n := range found {
		names = append(names, n)
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return "", &BackendError{Op: "discover", Err: errors.New("no pathlock_v4_ library is loaded; give Options.LibraryCode or LibraryFile to load one")}
	case 1:
		return names[0], nil
	}
	return "", &BackendError{Op: "discover", Err: fmt.Errorf("several pathlock libraries are loaded (%s); name one in Options.LibraryName or give its text", strings.Join(names, ", "))}
}

// LibraryName is the library this client calls (pathlock_v4_<H>).
func (c *Client) LibraryName() string { return c.name }

// LibraryInfo describes a loaded library, as its read-only info function
// tells (libraries without one answer only Name).
type LibraryInfo struct {
	Name        string
	Matrix      string
	Version     string
	Fingerprint string
}

// Info asks the library's read-only info function which matrix it serves.
// A library without that function answers only its Name.
func (c *Client) Info(ctx context.Context) (LibraryInfo, error) {
	out := LibraryInfo{Name: c.name}
	conn, err := c.be.conn(ctx, "default")
	if err != nil {
		return out, &BackendError{Op: "info", Err: err}
	}
	v, err := c.exchange(ctx, "info", conn, func(conn redis.Conn) (interface{}, error) {
		return doTimed(conn, c.readBudget(ctx), "FCALL_RO", c.prefix+"info", 0)
	}, nil)
	if err != nil {
		if isFunctionNotFound(err) {
			return out, nil
		}
		return out, c.callError(ctx, "info", err)
	}
	var words []string
	flatten(v, &words)
	if len(words) > 0 && words[0] == "info" {
		words = words[1:]
	}
	// Either positional (name, matrix, version, fingerprint) or key/value pairs.
	kv := map[string]string{}
	for i := 0; i+1 < len(words); i += 2 {
		kv[words[i]] = words[i+1]
	}
	if kv["matrix"] != "" || kv["fingerprint"] != "" {
		out.Matrix, out.Version, out.Fingerprint = kv["matrix"], kv["version"], kv["fingerprint"]
		return out, nil
	}
	if len(words) >= 4 {
		out.Matrix, out.Version, out.Fingerprint = words[1], words[2], words[3]
	}
	return out, nil
}

func flatten(v interface{}, out *[]string) {
	switch t := v.(type) {
	case []interface{}:
		for _, e := range t {
			flatten(e, out)
		}
	case []byte:
		*out = append(*out, string(t))
	case string:
		*out = append(*out, t)
	case int64:
		*out = append(*out, fmt.Sprint(t))
	}
}

// LoadLibrary loads the library text given in Options on every master
// (FUNCTION LOAD without REPLACE; "already exists" is success).
func (c *Client) LoadLibrary(ctx context.Context) error {
	if c.code == "" {
		return invalidf("no library text was given (Options.LibraryCode or LibraryFile)")
	}
	addrs, err := c.be.masters(ctx)
	if err != nil {
		return &BackendError{Op: "FUNCTION LOAD", Err: err}
	}
	for _, a := range addrs {
		conn, err := c.be.dialAddr(ctx, a)
		if err != nil {
			return &BackendError{Op: "FUNCTION LOAD", Err: err}
		}
		err = loadOn(conn, c.code)
		conn.Close()
		if err != nil {
			return &BackendError{Op: "FUNCTION LOAD on " + a, Err: err}
		}
	}
	return nil
}

func loadOn(conn redis.Conn, code string) error {
	_, err := conn.Do("FUNCTION", "LOAD", code)
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}

func isFunctionNotFound(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(string(re), "Function not found")
}

// Close releases the connections. Locks stay held until released or expired.
func (c *Client) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.wake.closeAll()
	return c.be.close()
}

var nsRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// CheckNamespace refuses a namespace that is not 1..128 bytes of
// [A-Za-z0-9._:-].
func CheckNamespace(ns string) error {
	if !nsRE.MatchString(ns) {
		return invalidf("namespace %q: 1 to 128 of A-Z a-z 0-9 . _ : -", ns)
	}
	return nil
}
