package armada

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
)

// This file reads YAML documents the way Armada's simulator loader does
// (viper and mapstructure: keys matched to field names without regard to
// case, durations as Go duration strings, quantities as Kubernetes
// quantities), but strictly: unknown and repeated keys, values of the
// wrong kind and everything the mapping cannot honour are reported, all at
// once, each a *flotilla.FieldError at its YAML path
// (queues[0].jobTemplates[2].runtimeDistribution.minimum).

// maxYAMLNodes bounds the nodes a reader visits, aliases expanded, so that
// a small file of nested aliases cannot make it work without end.
const maxYAMLNodes = 50_000

// IsFile reports whether path names one of Armada's simulator files:
// it ends in .yaml or .yml (in any case).
func IsFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return true
	}
	return false
}

// yamlReader walks a YAML document, collecting problems.
type yamlReader struct {
	errs    []error
	visited int
	tooBig  bool
}

// add records a problem.
func (r *yamlReader) add(field, value string, class error, format string, args ...any) {
	if field == "" {
		field = strictjson.RootField
	}
	r.errs = append(r.errs, flotilla.Errorf(field, value, class, format, args...))
}

// err is every problem recorded, joined; nil when there are none.
func (r *yamlReader) err() error { return errors.Join(r.errs...) }

// yamlRoot parses data as one YAML document and returns its root node;
// an empty document, a syntax error or a second document is a problem of
// the document as a whole.
func (r *yamlReader) yamlRoot(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			r.add("", "", flotilla.ErrRequired, "the file is empty")
		} else {
			r.add("", "", flotilla.ErrMalformed, "not YAML: %v", err)
		}
		return nil
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		r.add("", "", flotilla.ErrMalformed, "want one YAML document, found more (or trailing junk)")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		r.add("", "", flotilla.ErrRequired, "the file is empty")
		return nil
	}
	return doc.Content[0]
}

// resolve follows aliases and counts the node against the budget; nil
// once the budget is spent (the problem is recorded once).
func (r *yamlReader) resolve(n *yaml.Node) *yaml.Node {
	for depth := 0; n != nil && n.Kind == yaml.AliasNode; depth++ {
		if depth > 100 {
			r.add("", "", flotilla.ErrOutOfRange, "an alias chain longer than 100")
			return nil
		}
		n = n.Alias
	}
	r.visited++
	if r.visited > maxYAMLNodes {
		if !r.tooBig {
			r.tooBig = true
			r.add("", "", flotilla.ErrOutOfRange, "more than %d YAML nodes once aliases are expanded", maxYAMLNodes)
		}
		return nil
	}
	return n
}

// yamlNull reports whether n is absent or YAML's null (~, null, or nothing).
func yamlNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// yamlKind names what n is, for messages.
func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "the scalar " + strconv.Quote(yamlShort(n.Value))
	}
	return "something else"
}

// yamlShort cuts a value for a message.
func yamlShort(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// yamlValue is n's text for a FieldError's Value: a scalar as written, else
// what it is.
func yamlValue(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return yamlShort(n.Value)
	}
	return yamlKind(n)
}

// object returns the fields of the mapping n by their known names (keys
// are matched to known without regard to case, as Armada's loader does),
// reporting unknown and repeated keys and merge keys. Null or absent is
// the empty mapping; anything else is a problem (and nil).
func (r *yamlReader) object(n *yaml.Node, path string, known ...string) map[string]*yaml.Node {
	n = r.resolve(n)
	if yamlNull(n) {
		return map[string]*yaml.Node{}
	}
	if n.Kind != yaml.MappingNode {
		r.add(path, yamlValue(n), flotilla.ErrMalformed, "want a mapping, got %s", yamlKind(n))
		return nil
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := r.resolve(n.Content[i])
		if k == nil {
			return out
		}
		if k.Kind != yaml.ScalarNode {
			r.add(path, yamlKind(k), flotilla.ErrMalformed, "a key must be a plain name")
			continue
		}
		if k.Tag == "!!merge" {
			r.add(strictjson.JoinKey(path, k.Value), k.Value, flotilla.ErrUnsupported, "merge keys are not read; write the fields out")
			continue
		}
		name := ""
		for _, f := range known {
			if strings.EqualFold(f, k.Value) {
				name = f
				break
			}
		}
		field := strictjson.JoinKey(path, k.Value)
		if name == "" {
			if s := strictjson.Suggest(k.Value, known); s != "" {
				r.add(field, k.Value, flotilla.ErrUnknownName, "unknown field; did you mean %q?", s)
			} else {
				r.add(field, k.Value, flotilla.ErrUnknownName, "unknown field; known fields: %s", strings.Join(known, ", "))
			}
			continue
		}
		if _, dup := out[name]; dup {
			r.add(field, k.Value, flotilla.ErrDuplicate, "the field %s is given twice", name)
			continue
		}
		out[name] = n.Content[i+1]
	}
	return out
}

// list returns the items of the sequence n; null or absent is empty.
func (r *yamlReader) list(n *yaml.Node, path string) []*yaml.Node {
	n = r.resolve(n)
	if yamlNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		r.add(path, yamlValue(n), flotilla.ErrMalformed, "want a list, got %s", yamlKind(n))
		return nil
	}
	return n.Content
}

// scalar returns n's text when n is a scalar ("" and true when null or
// absent); false, with the problem recorded, otherwise.
func (r *yamlReader) scalar(n *yaml.Node, path string) (string, bool) {
	if n == nil {
		return "", true
	}
	if n = r.resolve(n); n == nil {
		return "", false // past the budget, or a bad alias: reported
	}
	if yamlNull(n) {
		return "", true
	}
	if n.Kind != yaml.ScalarNode {
		r.add(path, yamlValue(n), flotilla.ErrMalformed, "want a single value, got %s", yamlKind(n))
		return "", false
	}
	return n.Value, true
}

// str is n's text ("" when null or absent).
func (r *yamlReader) str(n *yaml.Node, path string) string {
	s, _ := r.scalar(n, path)
	return s
}

// integer reads a whole number in [lo, hi] (0 when null or absent); a
// quoted number is read too, as Armada's loader reads it.
func (r *yamlReader) integer(n *yaml.Node, path string, lo, hi int64) int64 {
	s, ok := r.scalar(n, path)
	if !ok || s == "" {
		return 0
	}
	digits := strings.ReplaceAll(s, "_", "")
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		// A whole number written as a float (1e3, 10.0) reads as one.
		f, ferr := strconv.ParseFloat(digits, 64)
		if ferr != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			r.add(path, yamlShort(s), flotilla.ErrMalformed, "want a whole number")
			return 0
		}
		v = int64(f)
	}
	if v < lo || v > hi {
		r.add(path, s, flotilla.ErrOutOfRange, "want %d to %d", lo, hi)
		return 0
	}
	return v
}

// number reads a finite number (0 when null or absent).
func (r *yamlReader) number(n *yaml.Node, path string) float64 {
	s, ok := r.scalar(n, path)
	if !ok || s == "" {
		return 0
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		r.add(path, yamlShort(s), flotilla.ErrMalformed, "want a finite number")
		return 0
	}
	return v
}

// duration reads a non-negative Go duration such as "90s" or "1h30m" (0
// when null or absent); a bare number other than 0 is refused, since
// Armada's loader would read it as nanoseconds.
func (r *yamlReader) duration(n *yaml.Node, path string) time.Duration {
	s, ok := r.scalar(n, path)
	if !ok || s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		r.add(path, yamlShort(s), flotilla.ErrMalformed, "want a duration such as 90s or 1h30m")
	case d < 0:
		r.add(path, s, flotilla.ErrNegative, "")
	default:
		return d
	}
	return 0
}

// stringMap reads a mapping of names to single values (nil when null or
// absent): labels, node selectors, annotations, resource lists.
func (r *yamlReader) stringMap(n *yaml.Node, path string) map[string]string {
	n = r.resolve(n)
	if yamlNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		r.add(path, yamlValue(n), flotilla.ErrMalformed, "want a mapping, got %s", yamlKind(n))
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := r.resolve(n.Content[i])
		if k == nil {
			return out
		}
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			r.add(path, yamlValue(k), flotilla.ErrMalformed, "a key must be a plain name")
			continue
		}
		field := strictjson.JoinKey(path, k.Value)
		if _, dup := out[k.Value]; dup {
			r.add(field, k.Value, flotilla.ErrDuplicate, "the key is given twice")
			continue
		}
		if v, ok := r.scalar(n.Content[i+1], field); ok {
			out[k.Value] = v
		}
	}
	return out
}

// yamlIndex appends a list index to a path.
func yamlIndex(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// PathRenamer rewrites field paths by prefix: the first pair whose from is
// the path, or a prefix of it ending before '.' or '[', gives the new
// prefix; paths no pair matches are kept.
type PathRenamer [][2]string

// Rename applies the PathRenamer to one path.
func (rn PathRenamer) Rename(field string) string {
	for _, p := range rn {
		from, to := p[0], p[1]
		if field == from {
			return to
		}
		if strings.HasPrefix(field, from) && (field[len(from)] == '.' || field[len(from)] == '[') {
			return to + field[len(from):]
		}
	}
	return field
}

// Prefixed puts prefix before both sides of every pair of rn.
func (rn PathRenamer) Prefixed(prefix string) PathRenamer {
	out := make(PathRenamer, len(rn))
	for i, p := range rn {
		out[i] = [2]string{prefix + p[0], prefix + p[1]}
	}
	return out
}
