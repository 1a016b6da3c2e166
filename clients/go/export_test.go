package pathlock

import "time"

// SetAfterAttempt lets tests act between an attempt's reply and the wait
// loop's look at its context (the grant-races-cancel case).
func SetAfterAttempt(c *Client, f func(granted bool)) { c.afterAttempt = f }

// SetRecheck sets the longest sleep of a wait between attempts: a test that
// makes it longer than the wait sees grants only through wake-up messages.
func SetRecheck(c *Client, d time.Duration) { c.recheck = d }

// ExpireDefaultLimits makes the client's reading of the default limits
// stale, as DefaultLimitsRefresh after it: the next Acquire reads them again.
func ExpireDefaultLimits(c *Client) {
	c.defaults.mu.Lock()
	c.defaults.read = false
	c.defaults.mu.Unlock()
}
