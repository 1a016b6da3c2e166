package pathlock

// The server's clock, for acquire's deadline_ms (docs/lua-protocol.md#deadlines):
// serverClock keeps, per server (per slot of a Cluster), a reading of the
// server's clock (TIME) against this process's monotonic clock, read again
// every clockRefresh and after a "late" reply (call.go's sender).

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// clockRefresh: how long a reading of a server's clock is used.
const clockRefresh = 30 * time.Second

// serverClock: per server, the latest reading of its clock.
type serverClock struct {
	mu       sync.Mutex
	readings map[string]clockReading
}

type clockReading struct {
	serverMs int64     // the server's clock (ms since the epoch) ...
	at       time.Time // ... when the reply arrived (monotonic)
	noTime   bool      // TIME is not allowed: send no deadline
}

func (s *serverClock) get(key string) (clockReading, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.readings[key]
	if ok && time.Since(r.at) > clockRefresh {
		return r, false
	}
	return r, ok
}

func (s *serverClock) learn(key string, r clockReading) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readings == nil || len(s.readings) > 4096 {
		s.readings = map[string]clockReading{}
	}
	s.readings[key] = r
}

// deadlineArg: deadline_ms for a call sent now on conn whose caller waits
// budget for the reply; "" when the server's clock cannot be read (an ACL
// without TIME). It reads the clock (TIME) when it has no fresh reading.
func (s *serverClock) deadlineArg(conn redis.Conn, key string, budget time.Duration) (string, error) {
	r, ok := s.get(key)
	if !ok {
		v, err := redis.Int64s(doTimed(conn, budget, "TIME"))
		var re redis.Error
		switch {
		case errors.As(err, &re):
			r = clockReading{noTime: true, at: time.Now()}
		case err != nil:
			return "", err
		case len(v) != 2:
			return "", errors.New("TIME: unexpected reply")
		default:
			r = clockReading{serverMs: v[0]*1000 + v[1]/1000, at: time.Now()}
		}
		s.learn(key, r)
	}
	if r.noTime {
		return "", nil
	}
	at := r.serverMs + time.Since(r.at).Milliseconds() + budget.Milliseconds()
	return strconv.FormatInt(at, 10), nil
}
