package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/flotilla-sched/flotilla"
)

// RootField is the Field of errors about a document as a whole (syntax
// errors, empty input, trailing data).
const RootField = "(root)"

// Decode decodes the JSON document data into v, a pointer to a struct.
//
// Before decoding it walks the document's tokens against v's type and
// reports, all at once and with JSON paths such as rounds[0].submit[1].cuont:
// object keys that name no field (matched exactly, case-sensitively, unlike
// encoding/json), keys repeated within one object, and values of the wrong
// JSON type or out of the field's range. A syntax error stops the walk and is
// reported alone, with its line and column. JSON null is accepted anywhere
// and means "absent", as in encoding/json. Data after the top-level value is
// an error.
func Decode(data []byte, v any) error {
	c := &checker{
		data:    data,
		dec:     json.NewDecoder(bytes.NewReader(data)),
		structs: map[reflect.Type]*structInfo{},
	}
	c.dec.UseNumber()
	tok, err := c.dec.Token()
	if errors.Is(err, io.EOF) {
		return flotilla.Errorf(RootField, "", flotilla.ErrRequired, "empty document: want a JSON object")
	}
	if err != nil {
		return c.syntax(err)
	}
	if err := c.check("", reflect.TypeOf(v).Elem(), tok); err != nil {
		return err
	}
	end := c.dec.InputOffset()
	if _, err := c.dec.Token(); !errors.Is(err, io.EOF) {
		start := int(end)
		for start < len(data) && strings.ContainsRune(" \t\r\n", rune(data[start])) {
			start++
		}
		line, col := lineCol(data, start)
		return flotilla.Errorf(RootField, snippet(data, start), flotilla.ErrMalformed,
			"data after the top-level value at line %d, column %d", line, col)
	}
	if len(c.errs) > 0 {
		return errors.Join(c.errs...)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// Unreachable when the walk above agrees with encoding/json; kept so
		// that a disagreement is an error rather than a silent zero value.
		return flotilla.Errorf(RootField, "", flotilla.ErrMalformed, "%v", err)
	}
	return nil
}

// checker walks a token stream against a Go type.
type checker struct {
	data    []byte
	dec     *json.Decoder
	errs    []error
	structs map[reflect.Type]*structInfo
}

type structInfo struct {
	names  []string // JSON names in declaration order
	byName map[string]reflect.Type
}

func (c *checker) info(t reflect.Type) *structInfo {
	if si, ok := c.structs[t]; ok {
		return si
	}
	si := &structInfo{byName: map[string]reflect.Type{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		si.names = append(si.names, name)
		si.byName[name] = f.Type
	}
	c.structs[t] = si
	return si
}

// check verifies the value starting with tok against t. Type problems are
// collected in c.errs; the returned error is a syntax error, which ends the
// walk.
func (c *checker) check(path string, t reflect.Type, tok json.Token) error {
	if tok == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			c.mismatch(path, tok, "an object")
			return c.skip(tok)
		}
		si := c.info(t)
		return c.object(path, func(p, k string, vt json.Token) error {
			ft, ok := si.byName[k]
			if !ok {
				c.errs = append(c.errs, unknownField(p, k, si.names))
				return c.skip(vt)
			}
			return c.check(p, ft, vt)
		})
	case reflect.Map:
		if tok != json.Delim('{') {
			c.mismatch(path, tok, "an object")
			return c.skip(tok)
		}
		return c.object(path, func(p, _ string, vt json.Token) error {
			return c.check(p, t.Elem(), vt)
		})
	case reflect.Slice:
		if tok != json.Delim('[') {
			c.mismatch(path, tok, "an array")
			return c.skip(tok)
		}
		for i := 0; c.dec.More(); i++ {
			vt, err := c.dec.Token()
			if err != nil {
				return c.syntax(err)
			}
			if err := c.check(fmt.Sprintf("%s[%d]", path, i), t.Elem(), vt); err != nil {
				return err
			}
		}
		return c.closing()
	case reflect.String:
		if _, ok := tok.(string); !ok {
			c.mismatch(path, tok, "a string")
			return c.skip(tok)
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			c.mismatch(path, tok, "true or false")
			return c.skip(tok)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			c.mismatch(path, tok, "a number")
			return c.skip(tok)
		}
		if err := checkNumber(path, string(n), t); err != nil {
			c.errs = append(c.errs, err)
		}
	default:
		// Types the scenario formats do not use; let encoding/json judge.
		return c.skip(tok)
	}
	return nil
}

// object walks the members of an object whose '{' has been read, calling
// member for each first occurrence of a key and reporting repeats.
func (c *checker) object(path string, member func(p, k string, vt json.Token) error) error {
	seen := map[string]bool{}
	for c.dec.More() {
		kt, err := c.dec.Token()
		if err != nil {
			return c.syntax(err)
		}
		k, _ := kt.(string)
		vt, err := c.dec.Token()
		if err != nil {
			return c.syntax(err)
		}
		p := JoinKey(path, k)
		if seen[k] {
			c.errs = append(c.errs, flotilla.Errorf(p, k, flotilla.ErrDuplicate, "key appears twice in one object"))
			if err := c.skip(vt); err != nil {
				return err
			}
			continue
		}
		seen[k] = true
		if err := member(p, k, vt); err != nil {
			return err
		}
	}
	return c.closing()
}

// closing reads the '}' or ']' that ends the current object or array.
func (c *checker) closing() error {
	if _, err := c.dec.Token(); err != nil {
		return c.syntax(err)
	}
	return nil
}

// skip consumes the rest of a value whose first token is tok.
func (c *checker) skip(tok json.Token) error {
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := c.dec.Token()
		if err != nil {
			return c.syntax(err)
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

func (c *checker) mismatch(path string, tok json.Token, want string) {
	c.errs = append(c.errs, flotilla.Errorf(fieldOrRoot(path), describe(tok), flotilla.ErrMalformed, "want %s", want))
}

// syntax turns a decoder error into a *FieldError with line and column.
func (c *checker) syntax(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// In token mode Offset is the offending byte, or the start of the
		// value that holds it.
		off := int(se.Offset)
		line, col := lineCol(c.data, off)
		return flotilla.Errorf(RootField, snippet(c.data, off), flotilla.ErrMalformed,
			"invalid JSON at line %d, column %d: %v", line, col, se)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return flotilla.Errorf(RootField, "", flotilla.ErrMalformed, "unexpected end of the document")
	default:
		return flotilla.Errorf(RootField, "", flotilla.ErrMalformed, "%v", err)
	}
}

// checkNumber verifies that a JSON number literal fits a Go numeric type the
// way encoding/json would decode it.
func checkNumber(path, lit string, t reflect.Type) error {
	var err error
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err = strconv.ParseInt(lit, 10, t.Bits())
		if err != nil && isRange(err) {
			lo, hi := -(int64(1) << (t.Bits() - 1)), int64(1)<<(t.Bits()-1)-1
			return flotilla.Errorf(path, lit, flotilla.ErrOutOfRange, "want a whole number in [%d, %d]", lo, hi)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if strings.HasPrefix(lit, "-") {
			return flotilla.Errorf(path, lit, flotilla.ErrNegative, "want a whole number ≥ 0")
		}
		_, err = strconv.ParseUint(lit, 10, t.Bits())
		if err != nil && isRange(err) {
			return flotilla.Errorf(path, lit, flotilla.ErrOutOfRange, "want a whole number in [0, %d]", uint64(math.MaxUint64)>>(64-t.Bits()))
		}
	default:
		_, err = strconv.ParseFloat(lit, t.Bits())
		if err != nil && isRange(err) {
			return flotilla.Errorf(path, lit, flotilla.ErrOutOfRange, "too large")
		}
		if err != nil {
			return flotilla.Errorf(path, lit, flotilla.ErrMalformed, "want a number")
		}
		return nil
	}
	if err != nil {
		return flotilla.Errorf(path, lit, flotilla.ErrMalformed, "want a whole number")
	}
	return nil
}

func isRange(err error) bool { return errors.Is(err, strconv.ErrRange) }

func unknownField(path, key string, known []string) error {
	if s := Suggest(key, known); s != "" {
		return flotilla.Errorf(path, key, flotilla.ErrUnknownName, "unknown field; did you mean %q?", s)
	}
	return flotilla.Errorf(path, key, flotilla.ErrUnknownName, "unknown field; known fields: %s", strings.Join(known, ", "))
}

// Suggest returns the known name closest to key, or "" when none is close:
// a case-insensitive match, or within edit distance 1 (2 for keys of five
// or more bytes), transpositions counting as one edit.
func Suggest(key string, known []string) string {
	best, bestD := "", 3
	limit := 1
	if len(key) >= 5 {
		limit = 2
	}
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
		if d := editDistance(strings.ToLower(key), strings.ToLower(k)); d <= limit && d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return len(a) + len(b) // not worth comparing
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// JoinKey appends an object key to a path; an empty key is written "".
func JoinKey(path, key string) string {
	if key == "" {
		key = `""`
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func fieldOrRoot(path string) string {
	if path == "" {
		return RootField
	}
	return path
}

// describe renders a token for an error's Value.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "{…}"
		}
		return "[…]"
	case string:
		return v
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(tok)
}

// lineCol returns the 1-based line and byte column of offset off.
func lineCol(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	return line, off - bytes.LastIndexByte(data[:off], '\n')
}

// snippet returns up to 20 bytes of data from off, stopping at a newline.
func snippet(data []byte, off int) string {
	off = min(max(off, 0), len(data))
	s := data[off:min(off+20, len(data))]
	if i := bytes.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return string(s)
}
