package pathlock

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors, for errors.Is.
var (
	// ErrRefused: the request conflicts with a held lock or an older waiter.
	// The error is a *RefusedError.
	ErrRefused = errors.New("pathlock: refused")
	// ErrWouldDeadlock: a conversion refused by a held lock that is itself
	// waiting to convert to something the converting lock refuses; the
	// lock is unchanged (docs/design.md#conversion). The error is a
	// *RefusedError with WouldDeadlock set (errors.Is ErrRefused too).
	ErrWouldDeadlock = errors.New("pathlock: would deadlock")
	// ErrNotHolder: the id and token name no live lock (a reentry, release,
	// renew, conversion); nothing was changed.
	ErrNotHolder = errors.New("pathlock: not the holder of a live lock")
	// ErrInvalid: bad input (a path, an operation, a TTL, ...); nothing was
	// changed. The error is an *InvalidError.
	ErrInvalid = errors.New("pathlock: invalid request")
	// ErrBackend: Redis could not answer the call, or answered an error.
	// The error is a *BackendError.
	ErrBackend = errors.New("pathlock: backend error")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("pathlock: client closed")
	// ErrPoolExhausted: all Options.MaxConns connections to a server were in
	// use; nothing was sent. The error is a *BackendError.
	ErrPoolExhausted = errors.New("pathlock: connection pool exhausted")
)

// Relation is how a held path and a requested path overlap.
type Relation string

// The relations a conflict can have.
const (
	Same           Relation = "same"            // the same path
	HeldAncestor   Relation = "held_ancestor"   // the held path contains the requested one
	HeldDescendant Relation = "held_descendant" // the held path lies inside the requested one
)

// Conflict describes what refused a request: a held lock, or (Queued) an
// older request waiting in line.
type Conflict struct {
	ID            string        // the lock's id, or the waiter's id when Queued
	Op            string        // its operation, in its own matrix's names
	Role          string        // its role whose path overlaps
	Path          string        // that path
	Owner         string        // its owner
	ExpiresIn     time.Duration // what is left of its lease (or reservation)
	RequestedRole string        // the request's role it hit
	RequestedPath string        // the request's path it hit
	Relation      Relation
	Queued        bool // an older waiter, not a held lock
}

// RefusedError is the error of a refused Acquire or Convert.
type RefusedError struct {
	Conflict Conflict
	// WouldDeadlock: the conversion's Conflict is a held lock waiting to
	// convert to something the converting lock refuses (the library's
	// would_deadlock, answered at once; errors.Is ErrWouldDeadlock).
	WouldDeadlock bool
}

func (e *RefusedError) Error() string {
	c := e.Conflict
	what := "held"
	if c.Queued {
		what = "waiting"
	}
	verdict := "refused"
	if e.WouldDeadlock {
		verdict = "would deadlock"
		what = "held and waiting to convert:"
	}
	return fmt.Sprintf("pathlock: %s: %s %s by %q on %s (%s of %s %s)",
		verdict, what, c.Op, c.Owner, c.Path, c.Relation, c.RequestedRole, c.RequestedPath)
}

// Is makes errors.Is(err, ErrRefused) true, and errors.Is(err,
// ErrWouldDeadlock) when WouldDeadlock.
func (e *RefusedError) Is(target error) bool {
	return target == ErrRefused || e.WouldDeadlock && target == ErrWouldDeadlock
}

// InvalidError is bad input; nothing was changed.
type InvalidError struct {
	Message string
}

func (e *InvalidError) Error() string { return "pathlock: invalid: " + e.Message }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...interface{}) error {
	return &InvalidError{Message: fmt.Sprintf(format, args...)}
}

// BackendError is a failure of Redis or of the library: the server could not
// be reached, answered an error (NOPERM, OOM, LOADING, ...), or the
// namespace holds another data layout. Err is the cause.
type BackendError struct {
	Op  string // the library function or command
	Err error
}

func (e *BackendError) Error() string { return "pathlock: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *BackendError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBackend) true.
func (e *BackendError) Is(target error) bool { return target == ErrBackend }
