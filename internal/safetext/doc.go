// Package safetext renders names chosen by users (queues, jobs, nodes, banks)
// for plain-text tables. A name made only of printable characters is written
// as it is; any other name (control characters such as newline, tab or ESC,
// other non-printable runes, invalid UTF-8) is written Go-quoted, so that
// no name can add lines, shift columns or send terminal escape sequences.
// JSON output needs none of this: encoding/json escapes what it must.
package safetext
