package submit

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla-sched/flotilla"
)

// This file holds the submission rules of count expansion: a template's
// count (absent = 1, at least 0, the request's total at most
// MaxJobsPerRequest) and the client ids it expands to (id, or id-0 …
// id-(n-1)), each used once within the request.

// count resolves a template's count (absent = 1) against the request's
// limit.
func (c *checker) count(field string, n *int, total *int) int {
	v := 1
	if n != nil {
		v = *n
	}
	switch limit := c.rules.MaxJobsPerRequest; {
	case v < 0:
		c.add(flotilla.Errorf(field, strconv.Itoa(v), flotilla.ErrNegative, ""))
		return 0
	case v > limit-*total:
		c.add(flotilla.Errorf(field, strconv.Itoa(v), flotilla.ErrOutOfRange, "a request may hold at most %d jobs", limit))
		return 0
	}
	*total += v
	return v
}

// clientIDs reports a client id used twice within the request, after
// count expansion, at the later template. It returns the expanded client
// ids of the templates that have one, in job order; total is the
// request's number of jobs (count expansion included). A template's ids
// share one string; the ids of templates whose client ids are neither
// equal nor prefixes of one another cannot collide, and then no set of
// ids is built.
func (c *checker) clientIDs(req *Request, total int) []string {
	var bases []string
	for i := range req.Jobs {
		if req.Jobs[i].ClientID != "" {
			bases = append(bases, req.Jobs[i].ClientID)
		}
	}
	if len(bases) == 0 {
		return nil
	}
	out := make([]string, 0, total)
	var seen map[string]string // client id → template path
	if mayCollide(bases) {
		seen = make(map[string]string, total)
	}
	var ends []int
	for i := range req.Jobs {
		t := &req.Jobs[i]
		if t.ClientID == "" {
			continue
		}
		n := 1
		if t.Count != nil {
			n = max(*t.Count, 0)
		}
		if n > c.rules.MaxJobsPerRequest {
			continue // reported at count
		}
		from := len(out)
		out, ends = expandClientIDs(out, ends, t.ClientID, t.Count, n)
		if seen == nil {
			continue
		}
		p := fmt.Sprintf("jobs[%d]", i)
		dups, first := 0, ""
		kept := out[:from]
		for _, id := range out[from:] {
			if prev, dup := seen[id]; dup {
				if dups == 0 {
					first = fmt.Sprintf("client id %q is also %s's", id, prev)
				}
				dups++
				continue
			}
			seen[id] = p
			kept = append(kept, id)
		}
		out = kept
		if dups > 0 {
			c.add(flotilla.Errorf(p+".clientId", t.ClientID, flotilla.ErrDuplicate, "%s%s", first, more(dups)))
		}
	}
	return out
}

// mayCollide reports whether templates with these client ids can expand
// to a client id twice: only when one is a prefix of another (or equal
// to it), as id-k and id are the only forms. Sorted, a string's
// extensions follow it directly, so neighbours suffice.
func mayCollide(bases []string) bool {
	if len(bases) < 2 {
		return false
	}
	sorted := slices.Sorted(slices.Values(bases))
	for i := 1; i < len(sorted); i++ {
		if strings.HasPrefix(sorted[i], sorted[i-1]) {
			return true
		}
	}
	return false
}

// expandClientIDs appends a template's n client ids (id when count is
// absent, else id-0 … id-(n-1)) to out, all slices of one string; ends is scratch space, returned for
// reuse.
func expandClientIDs(out []string, ends []int, id string, count *int, n int) ([]string, []int) {
	if count == nil {
		return append(out, id), ends
	}
	if n == 0 {
		return out, ends
	}
	size := 0
	for k := range n {
		size += len(id) + 1 + decimalLen(k)
	}
	var b strings.Builder
	b.Grow(size)
	var digits [20]byte
	ends = ends[:0]
	for k := range n {
		b.WriteString(id)
		b.WriteByte('-')
		b.Write(strconv.AppendInt(digits[:0], int64(k), 10))
		ends = append(ends, b.Len())
	}
	all, start := b.String(), 0
	for _, end := range ends {
		out = append(out, all[start:end])
		start = end
	}
	return out, ends
}

// decimalLen is the number of digits of k ≥ 0.
func decimalLen(k int) int {
	n := 1
	for ; k >= 10; k /= 10 {
		n++
	}
	return n
}
