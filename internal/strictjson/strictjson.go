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
	"unicode/utf8"

	"github.com/flotilla-sched/flotilla"
)

// RootField is the Field of errors about a document as a whole (syntax
// errors, empty input, trailing data).
const RootField = "(root)"

// Decode decodes the JSON document data into v, a pointer to a struct (or
// to a slice, for a document that is an array).
//
// It walks the document's tokens against v's type and reports, all at once
// and with JSON paths such as rounds[0].submit[1].cuont: object keys that
// name no field (matched exactly, case-sensitively, unlike encoding/json),
// keys repeated within one object, values of the wrong JSON type or out
// of the field's range, and strings (values or keys) that are not UTF-8 as
// written, which encoding/json would silently read with U+FFFD in place of
// each bad byte. JSON null is accepted anywhere and means "absent",
// as in encoding/json.
//
// Decoding is lenient where checking is strict: v receives every value
// that is well typed, while a bad value is decoded as JSON null (a field is
// left absent, a map entry or array element gets its zero value), an
// unknown key is ignored and a repeated key keeps its first value. So a
// caller can go on to validate what was decoded and report those problems
// together with these (see Merge). A syntax error, an empty document, a
// top-level value that is not an object and data after the top-level value
// are fatal (Fatal reports them): they are returned alone, with Field
// RootField, and v is left unchanged.
func Decode(data []byte, v any) error {
	c := &checker{
		data:    data,
		dec:     json.NewDecoder(bytes.NewReader(data)),
		structs: map[reflect.Type]*structInfo{},
		// One pass over a document of UTF-8 spares the check of each
		// string.
		checkText: !utf8.Valid(data),
	}
	c.dec.UseNumber()
	tok, err := c.dec.Token()
	if errors.Is(err, io.EOF) {
		return flotilla.Errorf(RootField, "", flotilla.ErrRequired, "empty document: want a JSON object")
	}
	if err != nil {
		return c.syntax(err)
	}
	tree, err := c.check("", reflect.TypeOf(v).Elem(), tok)
	if err != nil {
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
	if _, isBad := tree.(bad); isBad {
		return errors.Join(c.errs...) // the top level is not an object: nothing to decode
	}
	clean, err := json.Marshal(tree)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(clean))
		dec.DisallowUnknownFields()
		err = dec.Decode(v)
	}
	if err != nil {
		// Unreachable when the walk above agrees with encoding/json; kept so
		// that a disagreement is an error rather than a silent zero value.
		return flotilla.Errorf(RootField, "", flotilla.ErrMalformed, "%v", err)
	}
	return errors.Join(c.errs...)
}

// Fatal reports whether err, returned by Decode, stopped decoding: it holds
// a problem with the document as a whole (Field RootField), so v was left
// unchanged and there is nothing more to check.
func Fatal(err error) bool {
	for _, e := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		if !errors.As(e, &fe) || fe.Field == RootField {
			return true
		}
	}
	return false
}

// Merge joins the problems Decode found (decoded) with those a later check
// of the decoded value found (later), dropping each later problem whose
// field is one where Decode left a value out (a value of the wrong type or
// range), or lies inside one: that value shows up again as missing, and
// saying so twice helps nobody. Only an object or array (or a problem that
// did not come from Decode) has an inside; a string, number or boolean
// covers its own path alone. A repeated key is not such a field: its
// first value is decoded, and a later problem with it is kept. The result
// is flat: one element per problem.
func Merge(decoded, later error) error {
	var out []error
	var reported []reportedPath
	for _, e := range flotilla.Problems(decoded) {
		out = append(out, e)
		var fe *flotilla.FieldError
		if errors.As(e, &fe) && !errors.Is(e, flotilla.ErrDuplicate) {
			var sp scalarProblem
			reported = append(reported, reportedPath{fe.Field, errors.As(fe.Err, &sp)})
		}
	}
	for _, e := range flotilla.Problems(later) {
		var fe *flotilla.FieldError
		if errors.As(e, &fe) && covered(fe.Field, reported) {
			continue
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// reportedPath is the path of a value Decode left out; scalar says the value
// was a string, number or boolean, with no inside.
type reportedPath struct {
	path   string
	scalar bool
}

// covered reports whether field is one of the reported paths or lies inside
// one that has an inside.
func covered(field string, reported []reportedPath) bool {
	for _, r := range reported {
		p := r.path
		if field == p || !r.scalar && (strings.HasPrefix(field, p+".") || strings.HasPrefix(field, p+"[")) {
			return true
		}
	}
	return false
}

// scalarProblem is the Err of a problem Decode found with a value whose
// field wants a string, a number or a boolean. Merge reads it to cover only
// that path: paths join object keys with an unescaped ".", so a path that
// extends a scalar's (resources.nvidia.com/gpu after resources.nvidia) is a
// sibling map key, never a part of the scalar. Its text and class
// (errors.Is) are those of the error it wraps.
type scalarProblem struct{ error }

func (e scalarProblem) Unwrap() error { return e.error }

// scalar marks fe as a problem with a scalar value (see scalarProblem).
func scalar(fe *flotilla.FieldError) *flotilla.FieldError {
	fe.Err = scalarProblem{fe.Err}
	return fe
}

// checker walks a token stream against a Go type.
type checker struct {
	data    []byte
	dec     *json.Decoder
	errs    []error
	structs map[reflect.Type]*structInfo
	// checkText is set when data is not UTF-8: encoding/json would read
	// its bad bytes as U+FFFD (two different names as one), so each
	// string is then checked in the input as written, last holding the
	// input of the token read last.
	checkText bool
	last      []byte
}

// token reads the next token, keeping its input in c.last when strings
// are checked.
func (c *checker) token() (json.Token, error) {
	if !c.checkText {
		return c.dec.Token()
	}
	start := c.dec.InputOffset()
	tok, err := c.dec.Token()
	c.last = c.data[start:c.dec.InputOffset()]
	return tok, err
}

// isText reports whether the token read last is UTF-8 as written (what
// precedes it there, blanks and separators, is ASCII).
func (c *checker) isText() bool { return !c.checkText || utf8.Valid(c.last) }

// lastString is the string token read last as written, its bad bytes
// kept (tok, decoded, when it cannot be found).
func (c *checker) lastString(tok json.Token) string {
	i, j := bytes.IndexByte(c.last, '"'), bytes.LastIndexByte(c.last, '"')
	if i < 0 || j <= i {
		return describe(tok)
	}
	return string(c.last[i+1 : j])
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

// bad stands for a value of the wrong type or range in the tree check
// builds; it is written as null (absent, or a map entry's zero value, which
// keeps the key and so the names a map declares).
type bad struct{}

// check verifies the value starting with tok against t and returns it as a
// generic tree (map[string]any, []any, string, bool, json.Number or nil)
// holding only what is well typed: a bad value is bad{} (null inside
// objects and arrays), an unknown or repeated key is left out. Type problems are collected in
// c.errs; the returned error is a syntax error, which ends the walk.
func (c *checker) check(path string, t reflect.Type, tok json.Token) (any, error) {
	if tok == nil {
		return nil, nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == quantitiesType {
		return c.quantities(path, tok)
	}
	switch t.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			c.mismatch(path, tok, "an object")
			return bad{}, c.skip(tok)
		}
		si := c.info(t)
		return c.object(path, func(p, k string, vt json.Token) (any, bool, error) {
			ft, ok := si.byName[k]
			if !ok {
				c.errs = append(c.errs, unknownField(p, k, si.names))
				return nil, false, c.skip(vt)
			}
			v, err := c.check(p, ft, vt)
			return v, true, err
		})
	case reflect.Map:
		if tok != json.Delim('{') {
			c.mismatch(path, tok, "an object")
			return bad{}, c.skip(tok)
		}
		return c.object(path, func(p, _ string, vt json.Token) (any, bool, error) {
			v, err := c.check(p, t.Elem(), vt)
			return v, true, err
		})
	case reflect.Slice:
		if tok != json.Delim('[') {
			c.mismatch(path, tok, "an array")
			return bad{}, c.skip(tok)
		}
		out := []any{}
		for i := 0; c.dec.More(); i++ {
			vt, err := c.token()
			if err != nil {
				return nil, c.syntax(err)
			}
			v, err := c.check(fmt.Sprintf("%s[%d]", path, i), t.Elem(), vt)
			if err != nil {
				return nil, err
			}
			if _, isBad := v.(bad); isBad {
				v = nil // keeps the indices of the elements after it
			}
			out = append(out, v)
		}
		return out, c.closing()
	case reflect.String:
		if _, ok := tok.(string); !ok {
			c.scalarMismatch(path, tok, "a string")
			return bad{}, c.skip(tok)
		}
		if !c.isText() {
			c.errs = append(c.errs, flotilla.Errorf(fieldOrRoot(path), c.lastString(tok), flotilla.ErrMalformed, "not UTF-8 text"))
			return bad{}, nil
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			c.scalarMismatch(path, tok, "true or false")
			return bad{}, c.skip(tok)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			c.scalarMismatch(path, tok, "a number")
			return bad{}, c.skip(tok)
		}
		if err := checkNumber(path, string(n), t); err != nil {
			c.errs = append(c.errs, scalar(err))
			return bad{}, nil
		}
	default:
		// Types the scenario formats do not use; let encoding/json judge.
		return c.generic(tok)
	}
	return tok, nil
}

// quantitiesType is flotilla.Quantities: an object of quantities, each a
// string or a number.
var quantitiesType = reflect.TypeFor[flotilla.Quantities]()

// quantities checks an object of quantities: each value a string or a
// number, a number kept as its text ({"cpu": 1} is {"cpu": "1"}), as
// Kubernetes reads a quantity.
func (c *checker) quantities(path string, tok json.Token) (any, error) {
	if tok != json.Delim('{') {
		c.mismatch(path, tok, "an object")
		return bad{}, c.skip(tok)
	}
	return c.object(path, func(p, _ string, vt json.Token) (any, bool, error) {
		switch v := vt.(type) {
		case nil:
			return nil, true, nil
		case json.Number:
			return string(v), true, nil
		case string:
			v2, err := c.check(p, reflect.TypeFor[string](), vt)
			return v2, true, err
		}
		c.scalarMismatch(p, vt, "a quantity: a string (\"500m\", \"4Gi\") or a number")
		return bad{}, true, c.skip(vt)
	})
}

// generic reads the rest of a value whose first token is tok as a generic
// tree, unchecked.
func (c *checker) generic(tok json.Token) (any, error) {
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		for c.dec.More() {
			kt, err := c.dec.Token()
			if err != nil {
				return nil, c.syntax(err)
			}
			vt, err := c.dec.Token()
			if err != nil {
				return nil, c.syntax(err)
			}
			v, err := c.generic(vt)
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			m[k] = v
		}
		return m, c.closing()
	case json.Delim('['):
		out := []any{}
		for c.dec.More() {
			vt, err := c.dec.Token()
			if err != nil {
				return nil, c.syntax(err)
			}
			v, err := c.generic(vt)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, c.closing()
	}
	return tok, nil
}

// object walks the members of an object whose '{' has been read, calling
// member for each first occurrence of a key and reporting repeats; it
// returns the members member kept, by key.
func (c *checker) object(path string, member func(p, k string, vt json.Token) (any, bool, error)) (any, error) {
	seen := map[string]bool{}
	out := map[string]any{}
	for c.dec.More() {
		kt, err := c.token()
		if err != nil {
			return nil, c.syntax(err)
		}
		k, _ := kt.(string)
		keyText, keyValue := c.isText(), ""
		if !keyText {
			keyValue = c.lastString(kt)
		}
		vt, err := c.token()
		if err != nil {
			return nil, c.syntax(err)
		}
		p := JoinKey(path, k)
		if !keyText {
			c.errs = append(c.errs, flotilla.Errorf(p, keyValue, flotilla.ErrMalformed, "a key is not UTF-8 text"))
			if err := c.skip(vt); err != nil {
				return nil, err
			}
			continue
		}
		if seen[k] {
			c.errs = append(c.errs, flotilla.Errorf(p, k, flotilla.ErrDuplicate, "key appears twice in one object"))
			if err := c.skip(vt); err != nil {
				return nil, err
			}
			continue
		}
		seen[k] = true
		v, keep, err := member(p, k, vt)
		if err != nil {
			return nil, err
		}
		if _, isBad := v.(bad); isBad {
			v = nil // null: a field reads as absent, a map entry as its zero value
		}
		if keep {
			out[k] = v
		}
	}
	return out, c.closing()
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

// scalarMismatch is mismatch for a field that wants a string, a number or a
// boolean (see scalarProblem).
func (c *checker) scalarMismatch(path string, tok json.Token, want string) {
	c.errs = append(c.errs, scalar(flotilla.Errorf(fieldOrRoot(path), describe(tok), flotilla.ErrMalformed, "want %s", want)))
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
func checkNumber(path, lit string, t reflect.Type) *flotilla.FieldError {
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
