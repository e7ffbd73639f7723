package submit

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
)

// TestNamesIdsAndLabelsAtTheirLimitsAreAcceptedAndOneByteMoreRefused: each
// limit of names.go, at the limit (accepted) and one byte over (refused
// whole, naming the field, with the value shortened).
func TestNamesIdsAndLabelsAtTheirLimitsAreAcceptedAndOneByteMoreRefused(t *testing.T) {
	// "é" is two bytes: a name of n bytes of it and 'x' is multi-byte text.
	text := func(n int) string { return strings.Repeat("é", n/2) + strings.Repeat("x", n%2) }
	cases := []struct {
		name  string
		field string
		limit int
		set   func(r *Request, v string)
	}{
		{"job set", "jobSet", MaxNameBytes, func(r *Request, v string) { r.JobSet = v }},
		{"queue", "queue", MaxNameBytes, func(r *Request, v string) { r.Queue = v }},
		{"client id", "jobs[0].clientId", MaxClientIDBytes, func(r *Request, v string) { r.Jobs[0].ClientID = v }},
		{"gang id", "jobs[0].gang.id", MaxNameBytes, func(r *Request, v string) { r.Jobs[0].Gang = &GangSpec{ID: v, Cardinality: 1} }},
		{"node selector value", "jobs[0].nodeSelector.zone", MaxLabelValueBytes, func(r *Request, v string) {
			r.Jobs[0].NodeSelector = map[string]string{"zone": v}
		}},
		{"node selector key", "", MaxLabelValueBytes, func(r *Request, v string) {
			r.Jobs[0].NodeSelector = map[string]string{v: "a"}
		}},
		{"prefixed node selector key", "", MaxLabelKeyBytes, func(r *Request, v string) {
			r.Jobs[0].NodeSelector = map[string]string{strings.Repeat("p", MaxNameBytes) + "/" + v[MaxNameBytes+1:]: "a"}
		}},
		{"toleration value", "jobs[0].tolerations[0].value", MaxLabelValueBytes, func(r *Request, v string) {
			r.Jobs[0].Tolerations = []Toleration{{Key: "k", Value: v, Effect: "NoSchedule"}}
		}},
		{"gang's uniformity label", "jobs[0].gang.nodeUniformityLabel", MaxLabelValueBytes, func(r *Request, v string) {
			r.Jobs[0].Gang = &GangSpec{ID: "g", Cardinality: 1, NodeUniformityLabel: v}
		}},
	}
	for _, c := range cases {
		at := text(c.limit)
		require.Equal(t, c.limit, len(at))
		req := request(cpuJob())
		c.set(req, at)
		_, err := submit(req)
		if c.field == "queue" {
			require.NoError(t, err, c.name) // the rules do not know which queues exist
		} else {
			require.NoError(t, err, "%s of %d bytes", c.name, c.limit)
		}
		req = request(cpuJob())
		c.set(req, at+"y")
		_, err = submit(req)
		ps := fieldErrors(t, err)
		require.Len(t, ps, 1, "%s of %d bytes: %v", c.name, c.limit+1, err)
		require.ErrorIs(t, ps[0], flotilla.ErrOutOfRange, c.name)
		if c.field != "" {
			require.Equal(t, c.field, ps[0].Field, c.name)
		} else {
			require.True(t, strings.HasPrefix(ps[0].Field, "jobs[0].nodeSelector."), ps[0].Field)
		}
		if c.limit > 64 {
			require.Less(t, len(ps[0].Value), 100, "%s: an over-long value is shortened", c.name)
			require.Contains(t, ps[0].Value, "bytes)", c.name)
		}
		require.True(t, utf8.ValidString(ps[0].Value), "%s: shortened at a character boundary", c.name)
	}
}

// TestNamesThatAreNotPathSegmentsAreRefused: "." and ".." cannot be a path
// segment (routers clean them away), so no queue or job set may be named
// so; text with a '/' can (escaped), and remains a valid job set name.
func TestNamesThatAreNotPathSegmentsAreRefused(t *testing.T) {
	for _, name := range []string{".", ".."} {
		req := request(cpuJob())
		req.JobSet = name
		reject(t, req, problem{"jobSet", name, flotilla.ErrMalformed})
		req = request(cpuJob())
		req.Queue = name
		reject(t, req, problem{"queue", name, flotilla.ErrMalformed})
	}
	for _, name := range []string{"...", ".a", "a.", "a/..", "%2E"} {
		req := request(cpuJob())
		req.JobSet = name
		accept(t, req)
	}
}

// TestARequestOfZeroInEveryResourceIsRefused: a job that requests nothing
// fits any node any number of times (one 1-cpu node took 20,003 such
// leases in one cycle), so it is refused as an empty request is; zero in
// some resources and more in one is a job.
func TestARequestOfZeroInEveryResourceIsRefused(t *testing.T) {
	for _, r := range []map[string]string{{"cpu": "0"}, {"cpu": "0", "memory": "0Gi"}, {"nvidia.com/gpu": "0", "cpu": "0m"}} {
		req := request(JobTemplate{Requests: r})
		reject(t, req, problem{"jobs[0].requests", requestsText(r), flotilla.ErrOutOfRange})
	}
	accept(t, request(JobTemplate{Requests: map[string]string{"cpu": "0", "memory": "1"}}))
	// An empty request is refused as before, once.
	reject(t, request(JobTemplate{Requests: map[string]string{}}), problem{"jobs[0].requests", "", flotilla.ErrRequired})
}

func TestShownKeepsShortValuesAndCutsLongOnesAtACharacter(t *testing.T) {
	require.Equal(t, "short", Shown("short"))
	s := strings.Repeat("x", 63) + "ééé"
	require.Equal(t, strings.Repeat("x", 63)+"… (69 bytes)", Shown(s))
	require.Equal(t, strings.Repeat("y", 64)+"… (65 bytes)", Shown(strings.Repeat("y", 65)))
}

func TestJobSetNameIsTextWithoutControlCharacters(t *testing.T) {
	for _, name := range []string{"a\x00b", "tab\there", "bad\xffutf8"} {
		req := request(cpuJob())
		req.JobSet = name
		reject(t, req, problem{"jobSet", name, flotilla.ErrMalformed})
	}
	req := request(cpuJob())
	req.JobSet = "team/a ünïcode"
	accept(t, req)
}
