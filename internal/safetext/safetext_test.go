package safetext

import (
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestNameQuotesOnlyNamesThatCouldBreakATable(t *testing.T) {
	cases := []struct{ in, want string }{
		{"queue-a", "queue-a"},
		{"team a", "team a"},
		{"équipe/ü", "équipe/ü"},
		{"", `""`},
		{"a\nb", `"a\nb"`},
		{"a\r", `"a\r"`},
		{"a\tb", `"a\tb"`},
		{"\x1b[31mred", `"\x1b[31mred"`},
		{"a\x7f", `"a\x7f"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{"rtl\u202eoverride", `"rtl\u202eoverride"`},
		{"\u00a0nbsp", `"\u00a0nbsp"`},
		{`"quoted"`, `"\"quoted\""`},
		{`mid"quote`, `mid"quote`},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, Name(tc.in), "%q", tc.in)
	}
}

// FuzzName: the result never holds a control character or invalid UTF-8,
// and a changed name reads back to the original with strconv.Unquote.
func FuzzName(f *testing.F) {
	for _, s := range []string{"a", "", "a\nb", "\x1b[2J", "\xff", `"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Name(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Name(%q) = %q is not valid UTF-8", s, got)
		}
		for _, r := range got {
			if !strconv.IsPrint(r) {
				t.Fatalf("Name(%q) = %q holds %U", s, got, r)
			}
		}
		if got != s {
			back, err := strconv.Unquote(got)
			if err != nil || back != s {
				t.Fatalf("Name(%q) = %q does not unquote back: %q, %v", s, got, back, err)
			}
		}
	})
}
