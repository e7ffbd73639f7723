package safetext

import (
	"strconv"
	"unicode/utf8"
)

// Name returns s unchanged when it is non-empty valid UTF-8 made of printable
// runes (strconv.IsPrint: letters, marks, numbers, punctuation, symbols and
// the ASCII space) that does not start with a double quote; otherwise it
// returns strconv.Quote(s). Quoting a name that starts with '"' keeps the two
// forms apart: a quoted name is always a quoted one.
func Name(s string) string {
	if s == "" || s[0] == '"' {
		return strconv.Quote(s)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
		i += size
	}
	return s
}
