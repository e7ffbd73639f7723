package submit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/flotilla-sched/flotilla"
)

// Limits on names and ids, in bytes of UTF-8. They bound what one request
// can make the service store and repeat in every event (a job set's name is
// in each of its events), and keep every backend's keys within what it can
// index (PostgreSQL refuses a b-tree key of about 2,700 bytes): a name at a
// limit is stored whole by every backend (backendtest's rule
// NamesAtTheirLimitsAreStoredWholeAndLongerOnesRefused).
const (
	// MaxNameBytes bounds the names of queues, job sets, clusters, nodes
	// and gangs: Kubernetes' limit for object names (DNS subdomains).
	MaxNameBytes = 253
	// MaxClientIDBytes bounds a client id as the submit file writes it;
	// count expansion adds "-k" (at most 1 + the digits of
	// Rules.MaxJobsPerRequest - 1).
	MaxClientIDBytes = 253
	// MaxLabelValueBytes bounds a label value (a node selector's value, a
	// toleration's or taint's value, a node label's value): Kubernetes'
	// limit.
	MaxLabelValueBytes = 63
	// MaxLabelKeyBytes bounds a label key (a node selector's key, a
	// toleration's or taint's key, a gang's nodeUniformityLabel): as in
	// Kubernetes, an optional prefix of at most MaxNameBytes, a '/', and a
	// name of at most MaxLabelValueBytes.
	MaxLabelKeyBytes = MaxNameBytes + 1 + MaxLabelValueBytes
)

// shownBytes is how much of an over-long value an error repeats.
const shownBytes = 64

// Shown is how an error names a value: the value itself, or for one of
// more than 64 bytes its first 64 (cut at a character boundary) followed
// by "…" and its length, so that a refusal does not send a huge value back.
func Shown(s string) string {
	if len(s) <= shownBytes {
		return s
	}
	cut := shownBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// CheckSegment checks a name that is a segment of the API's paths (a
// queue's, a job set's, a cluster's): UTF-8 text without control
// characters (PlainText), not "." or "..", which a path cannot carry even
// escaped (an HTTP router cleans them away), and at most MaxNameBytes.
// (A '/' is escaped in a path; the service refuses it in queue and
// cluster names for reasons of its own.) The
// empty name is the caller's to judge (required or absent). A problem is a
// *flotilla.FieldError at field, usable with errors.Is(err,
// flotilla.ErrMalformed) or flotilla.ErrOutOfRange; nil means valid.
func CheckSegment(field, kind, s string) error {
	switch {
	case s == "":
		return nil
	case len(s) > MaxNameBytes:
		return tooLong(field, kind+" name", s, MaxNameBytes)
	case !PlainText(s):
		return flotilla.Errorf(field, s, flotilla.ErrMalformed, "a %s name is UTF-8 text without control characters", kind)
	case s == "." || s == "..":
		return flotilla.Errorf(field, s, flotilla.ErrMalformed, "a %s name is a path segment: not \".\" or \"..\"", kind)
	}
	return nil
}

// CheckLength refuses a value longer than limit bytes (what names it:
// "client id", "node name"); nil otherwise.
func CheckLength(field, what, s string, limit int) error {
	if len(s) > limit {
		return tooLong(field, what, s, limit)
	}
	return nil
}

// CheckLabels checks label keys and values (a node selector's, a node's
// labels) against MaxLabelKeyBytes and MaxLabelValueBytes: one problem
// per entry, at field.<key>, in key order.
func CheckLabels(field string, labels map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		f := field + "." + Shown(k)
		if err := CheckLabelKey(f, k); err != nil {
			errs = append(errs, err)
		}
		if err := CheckLength(f, "label value", labels[k], MaxLabelValueBytes); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CheckLabelKey checks one label key: Kubernetes' form of an optional
// prefix of at most MaxNameBytes, '/', and a name of at most
// MaxLabelValueBytes.
func CheckLabelKey(field, k string) error {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = k, ""
	}
	if len(prefix) > MaxNameBytes || len(name) > MaxLabelValueBytes {
		return flotilla.Errorf(field, Shown(k), flotilla.ErrOutOfRange,
			"a label key is at most %d bytes, or a prefix of at most %d, '/' and %d more; this one has %d",
			MaxLabelValueBytes, MaxNameBytes, MaxLabelValueBytes, len(k))
	}
	return nil
}

func tooLong(field, what, s string, limit int) error {
	return flotilla.Errorf(field, Shown(s), flotilla.ErrOutOfRange, "a %s is at most %d bytes; this one has %d", what, limit, len(s))
}

// MaxPoolBytes bounds a pool's name (a Kubernetes label value, so that an
// executor may label its nodes with it).
const MaxPoolBytes = MaxLabelValueBytes

// CheckPool checks a pool's name (`executor -pool`, a job template's
// pools): 1 to MaxPoolBytes ASCII letters, digits, '-', '_' or '.',
// beginning and ending with a letter or a digit, as a Kubernetes label
// value. A problem is a *flotilla.FieldError naming field and the value.
func CheckPool(field, p string) error {
	if p == "" {
		return flotilla.Errorf(field, p, flotilla.ErrRequired, "a pool has a name")
	}
	if len(p) > MaxPoolBytes {
		return tooLong(field, "pool name", p, MaxPoolBytes)
	}
	alnum := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
	for i := 0; i < len(p); i++ {
		c := p[i]
		if alnum(c) || (c == '-' || c == '_' || c == '.') && i > 0 && i < len(p)-1 {
			continue
		}
		return flotilla.Errorf(field, Shown(p), flotilla.ErrMalformed,
			"a pool name is letters, digits, '-', '_' and '.', beginning and ending with a letter or digit")
	}
	return nil
}

// names checks a template's names, ids and labels against their limits.
func (c *checker) names(p string, t *JobTemplate) {
	c.add(CheckLength(p+".clientId", "client id", t.ClientID, MaxClientIDBytes))
	c.add(CheckLabels(p+".nodeSelector", t.NodeSelector))
	for i, tol := range t.Tolerations {
		tp := fmt.Sprintf("%s.tolerations[%d]", p, i)
		c.add(CheckLabelKey(tp+".key", tol.Key))
		c.add(CheckLength(tp+".value", "toleration value", tol.Value, MaxLabelValueBytes))
	}
	if g := t.Gang; g != nil {
		c.add(CheckLength(p+".gang.id", "gang id", g.ID, MaxNameBytes))
		c.add(CheckLabelKey(p+".gang.nodeUniformityLabel", g.NodeUniformityLabel))
		if t := g.Topology; t != nil {
			c.add(CheckLength(p+".gang.topology.name", "topology name", t.Name, MaxNameBytes))
			c.add(CheckLabelKey(p+".gang.topology.required", t.Required))
			c.add(CheckLabelKey(p+".gang.topology.preferred", t.Preferred))
		}
	}
}

// PlainText reports whether s is UTF-8 text free of control characters,
// as the names of job sets, queues and clusters must be.
func PlainText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}
