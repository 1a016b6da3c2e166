package pathlock

// SetAfterAttempt lets tests act between an attempt's reply and the wait
// loop's look at its context (the grant-races-cancel case).
func SetAfterAttempt(c *Client, f func(granted bool)) { c.afterAttempt = f }
