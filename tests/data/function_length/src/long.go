// Fixture for tools/dev/function_lengths.py (tests/CMakeLists.txt:
// function_length_finds_offenders): braces in strings, runes, raw strings
// and comments do not end a Go function early; a func type has no body.
package fixture

import "strings"

type shape struct{ n int }

func tooLong(x string) string {
	// 65 lines
	a := "}\""
	b := '}'
	c := `}}
}`
	// }
	/* } */
	var cb func(int) error
	_ = cb
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	x = strings.TrimSpace(x)
	return x + a + string(b) + c
}

func (s *shape) fits(x int) int {
	// 60 lines, a func literal in it
	double := func(y int) int {
		return y * s.n
	}
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	x++
	return double(x)
}

func oneLine() func() int { return func() int { return 1 } }
