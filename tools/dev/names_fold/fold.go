// The Go side of the test that every client folds names alike
// (tests/names_agree.py): the name policies of docs/design.md#names with
// golang.org/x/text (Debian's golang-golang-x-text-dev: Unicode 13.0).
// Usage: go run fold.go POLICY ASSIGNED_INC < names; prints, a line each,
// "=" and the folded name, or "!" and why it cannot be folded. A
// developer's tool: the Go client is to fold the same way.
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

type span struct{ first, last rune }

// The ranges of src/names/assigned_13.inc ({0xFIRST, 0xLAST}, ...).
func readAssigned(path string) ([]span, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var spans []span
	for _, m := range regexp.MustCompile(`\{0x([0-9A-F]+), 0x([0-9A-F]+)\}`).FindAllStringSubmatch(string(text), -1) {
		first, _ := strconv.ParseInt(m[1], 16, 32)
		last, _ := strconv.ParseInt(m[2], 16, 32)
		spans = append(spans, span{rune(first), rune(last)})
	}
	return spans, nil
}

func assigned(spans []span, r rune) bool {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].last >= r })
	return i < len(spans) && spans[i].first <= r
}

func fold(policy string, spans []span, name string) (string, string) {
	for at := 0; at < len(name); {
		r, size := utf8.DecodeRuneInString(name[at:])
		if r == utf8.RuneError && size <= 1 {
			return "", fmt.Sprintf("is not valid UTF-8 (at byte %d)", at)
		}
		if !assigned(spans, r) {
			return "", fmt.Sprintf("holds U+%04X, which is not assigned in Unicode 13.0: not every client can fold it", r)
		}
		at += size
	}
	if policy == "nfc" {
		return norm.NFC.String(name), ""
	}
	return norm.NFC.String(cherokeeUp(cases.Fold().String(norm.NFD.String(name)))), ""
}

// x/text's Fold maps Cherokee letters to their lowercase (U+AB70..U+ABBF,
// U+13F8..U+13FD); CaseFolding.txt maps them to the uppercase, which came
// first (Unicode 3.0; the lowercase were added in 8.0 and fold to it, so that
// folding stays stable). Found by tests/names_agree.py.
func cherokeeUp(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0xAB70 && r <= 0xABBF:
			return r - 0xAB70 + 0x13A0
		case r >= 0x13F8 && r <= 0x13FD:
			return r - 0x13F8 + 0x13F0
		}
		return r
	}, s)
}

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "nfc" && os.Args[1] != "nfc_casefold") {
		fmt.Fprintln(os.Stderr, "usage: go run fold.go nfc|nfc_casefold ASSIGNED_INC < names")
		os.Exit(2)
	}
	spans, err := readAssigned(os.Args[2])
	if err != nil || len(spans) == 0 {
		fmt.Fprintln(os.Stderr, "fold.go: no ranges in", os.Args[2], err)
		os.Exit(2)
	}
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for {
		line, err := in.ReadString('\n') // (not a Scanner: its lines lose a final "\r")
		if err != nil {
			break
		}
		if folded, problem := fold(os.Args[1], spans, strings.TrimSuffix(line, "\n")); problem != "" {
			fmt.Fprintf(out, "!%s\n", problem)
		} else {
			fmt.Fprintf(out, "=%s\n", folded)
		}
	}
}
