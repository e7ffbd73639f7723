package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/flotilla-sched/flotilla/internal/safetext"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
)

// Preemption reasons, as written in Preemption.Reason.
const (
	ReasonFairShare = "fair-share"
	ReasonUrgency   = "urgency"
)

// Output is what running a scenario decided, round by round: the JSON of
// `flotilla schedule -o json`.
type Output struct {
	Rounds []RoundOutput `json:"rounds"`
}

// RoundOutput is one round's decisions and the queues' standing at its end.
type RoundOutput struct {
	Round int `json:"round"`
	// Scheduled lists jobs that start running in this round. A running job
	// evicted and put back on its own node in the same round is in neither
	// Scheduled nor Preempted.
	Scheduled     []Placement     `json:"scheduled"`
	Preempted     []Preemption    `json:"preempted"`
	Unschedulable []Unschedulable `json:"unschedulable"`
	// Queues lists every queue of the scenario, idle ones too.
	Queues []QueueReport `json:"queues"`
	// Groups lists every group of the queue tree, in file order; absent
	// when the file has no groups.
	Groups []GroupReport `json:"groups,omitempty"`
}

// Placement is a job that starts running on a node.
type Placement struct {
	Job   string `json:"job"`
	Queue string `json:"queue"`
	Node  string `json:"node"`
}

// Preemption is a running job evicted from its node; Reason is
// ReasonFairShare or ReasonUrgency. For names the job whose placement
// needed the room (scheduler.Preemption.For), empty (and omitted) when
// none did: an evicted job that did not go back for another reason.
type Preemption struct {
	Job    string `json:"job"`
	Queue  string `json:"queue"`
	Node   string `json:"node"`
	Reason string `json:"reason"`
	For    string `json:"for,omitempty"`
}

// Unschedulable is a queued job the round did not place, and why.
type Unschedulable struct {
	Job    string `json:"job"`
	Queue  string `json:"queue"`
	Reason string `json:"reason"`
}

// QueueReport is a queue's standing at the end of a round.
type QueueReport struct {
	Name string `json:"name"`
	// Parent is the queue's group; empty (and omitted) for the root.
	Parent string `json:"parent,omitempty"`
	// Running and Queued count the queue's jobs running and still waiting at
	// the end of the round.
	Running int `json:"running"`
	Queued  int `json:"queued"`
	// Allocated is what the running jobs hold, resource name → quantity.
	Allocated         map[string]string `json:"allocated"`
	Share             float64           `json:"share"`
	FairShare         float64           `json:"fairShare"`
	AdjustedFairShare float64           `json:"adjustedFairShare"`
	// Usage is the queue's decayed average share after the round; present
	// only when the scenario turns usage memory on.
	Usage *float64 `json:"usage,omitempty"`
}

// GroupReport is a queue group's standing at the end of a round. Running,
// Queued, Allocated and Share are its queues' sums (every queue below it);
// FairShare and AdjustedFairShare are its part of its parent's, as for a
// queue.
type GroupReport struct {
	Name string `json:"name"`
	// Parent is the enclosing group; empty (and omitted) for the root.
	Parent            string            `json:"parent,omitempty"`
	Running           int               `json:"running"`
	Queued            int               `json:"queued"`
	Allocated         map[string]string `json:"allocated"`
	Share             float64           `json:"share"`
	FairShare         float64           `json:"fairShare"`
	AdjustedFairShare float64           `json:"adjustedFairShare"`
	// Usage is the sum of its queues' usage, only with usage memory on.
	Usage *float64 `json:"usage,omitempty"`
}

// ParseOutput decodes the JSON of WriteJSON strictly (unknown fields are
// errors), for golden files.
func ParseOutput(data []byte) (*Output, error) {
	out := new(Output)
	if err := strictjson.Decode(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

// WriteJSON writes out as indented JSON followed by a newline. Nil lists and
// maps are written as [] and {}, so the document's shape never depends on
// how the Output was built.
func WriteJSON(w io.Writer, out *Output) error {
	norm := Output{Rounds: make([]RoundOutput, 0)}
	if out != nil {
		for _, r := range out.Rounds {
			norm.Rounds = append(norm.Rounds, normalizeRound(r))
		}
	}
	data, err := json.MarshalIndent(&norm, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// normalizeRound returns r with nil lists and maps replaced by empty ones.
func normalizeRound(r RoundOutput) RoundOutput {
	r.Scheduled = orEmpty(r.Scheduled)
	r.Preempted = orEmpty(r.Preempted)
	r.Unschedulable = orEmpty(r.Unschedulable)
	qs := make([]QueueReport, len(r.Queues))
	for i, q := range r.Queues {
		if q.Allocated == nil {
			q.Allocated = map[string]string{}
		}
		qs[i] = q
	}
	r.Queues = qs
	if r.Groups != nil {
		gs := make([]GroupReport, len(r.Groups))
		for i, g := range r.Groups {
			if g.Allocated == nil {
				g.Allocated = map[string]string{}
			}
			gs[i] = g
		}
		r.Groups = gs
	}
	return r
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// maxReasons is how many distinct unschedulable reasons WriteTable shows per
// round.
const maxReasons = 5

// WriteTable renders out for people: per round a summary line, a table of
// the queues, the scheduled, preempted and unschedulable counts per queue,
// and the first few distinct unschedulable reasons with how many jobs each
// held back.
func WriteTable(w io.Writer, out *Output) error {
	if out == nil {
		return nil
	}
	ts := NewTableStream(w)
	for i := range out.Rounds {
		if err := ts.WriteRound(&out.Rounds[i]); err != nil {
			return err
		}
	}
	return nil
}

// TableStream writes the table of WriteTable one round at a time, keeping
// nothing of earlier rounds.
type TableStream struct {
	ew     errWriter
	rounds int
}

// NewTableStream returns a TableStream writing to w.
func NewTableStream(w io.Writer) *TableStream { return &TableStream{ew: errWriter{w: w}} }

// WriteRound writes one round's part of the table. After a write error it
// writes nothing more and returns that error.
func (ts *TableStream) WriteRound(r *RoundOutput) error {
	ew := &ts.ew
	if ts.rounds > 0 {
		ew.printf("\n")
	}
	ts.rounds++
	running, queued := 0, 0
	for _, q := range r.Queues {
		running += q.Running
		queued += q.Queued
	}
	ew.printf("round %d: %d scheduled, %d preempted, %d unschedulable; %d running, %d queued at the end\n",
		r.Round, len(r.Scheduled), len(r.Preempted), len(r.Unschedulable), running, queued)
	if err := writeShareTable(ew, r); err != nil {
		return err
	}
	ew.printf("  scheduled:     %s\n", countLine(len(r.Scheduled), func(i int) string { return safetext.Name(r.Scheduled[i].Queue) }))
	ew.printf("  preempted:     %s\n", countLine(len(r.Preempted), func(i int) string {
		return safetext.Name(r.Preempted[i].Queue) + " " + safetext.Name(r.Preempted[i].Reason)
	}))
	ew.printf("  unschedulable: %s\n", countLine(len(r.Unschedulable), func(i int) string { return safetext.Name(r.Unschedulable[i].Queue) }))
	writeReasons(ew, r.Unschedulable)
	return ew.err
}

// writeShareTable writes the round's queues and, for a queue tree, its
// groups: a flat scenario's table is the queues alone, as it always was; a
// tree adds each queue's parent and a table of the groups, and usage
// memory adds a USAGE column to both.
func writeShareTable(ew *errWriter, r *RoundOutput) error {
	tree, usage := len(r.Groups) > 0, false
	for _, q := range r.Queues {
		tree = tree || q.Parent != ""
		usage = usage || q.Usage != nil
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	row := func(name, parent string, running, queued int, alloc map[string]string, share, fair, adjusted float64, u *float64) {
		fmt.Fprintf(tw, "  %s\t", safetext.Name(name))
		if tree {
			fmt.Fprintf(tw, "%s\t", orDash(parent))
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.3f\t%.3f\t%.3f", running, queued, formatAllocated(alloc), share, fair, adjusted)
		if usage {
			v := 0.0
			if u != nil {
				v = *u
			}
			fmt.Fprintf(tw, "\t%.3f", v)
		}
		fmt.Fprintln(tw)
	}
	header := func(first string) {
		fmt.Fprintf(tw, "  %s\t", first)
		if tree {
			fmt.Fprint(tw, "PARENT\t")
		}
		fmt.Fprint(tw, "RUNNING\tQUEUED\tALLOCATED\tSHARE\tFAIR SHARE\tADJUSTED FAIR SHARE")
		if usage {
			fmt.Fprint(tw, "\tUSAGE")
		}
		fmt.Fprintln(tw)
	}
	header("QUEUE")
	for _, q := range r.Queues {
		row(q.Name, q.Parent, q.Running, q.Queued, q.Allocated, q.Share, q.FairShare, q.AdjustedFairShare, q.Usage)
	}
	if len(r.Groups) > 0 {
		header("GROUP")
		for _, g := range r.Groups {
			row(g.Name, g.Parent, g.Running, g.Queued, g.Allocated, g.Share, g.FairShare, g.AdjustedFairShare, g.Usage)
		}
	}
	return tw.Flush()
}

// orDash is a name for a table, "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return safetext.Name(s)
}

// JSONStream writes the document of WriteJSON one round at a time, byte for
// byte the same, keeping nothing of earlier rounds: `{"rounds": [`, each
// round as it comes, then `]}` on Close.
type JSONStream struct {
	ew     errWriter
	rounds int
	closed bool
	buf    []byte
}

// NewJSONStream returns a JSONStream writing to w. Nothing is written before
// the first WriteRound or Close.
func NewJSONStream(w io.Writer) *JSONStream { return &JSONStream{ew: errWriter{w: w}} }

// WriteRound writes one round, normalised as WriteJSON does (nil lists and
// maps as [] and {}). It is an error after Close; after a write error it
// writes nothing more and returns that error.
func (js *JSONStream) WriteRound(r *RoundOutput) error {
	if js.closed {
		return errors.New("scenario: JSONStream.WriteRound after Close")
	}
	n := normalizeRound(*r)
	if js.rounds == 0 {
		io.WriteString(&js.ew, "{\n  \"rounds\": [\n    ")
	} else {
		io.WriteString(&js.ew, ",\n    ")
	}
	js.rounds++
	return js.writeRound(&n)
}

// writeRound writes one normalised round as json.MarshalIndent(r, "    ",
// "  ") would, byte for byte, but streams its unschedulable list (which
// holds every queued job, a million in a large scenario) entry by entry
// through a small buffer instead of building and re-indenting the whole
// round in memory.
func (js *JSONStream) writeRound(r *RoundOutput) error {
	b := js.buf[:0]
	field := func(name string, v any) error {
		data, err := json.MarshalIndent(v, "      ", "  ")
		if err != nil {
			return err
		}
		b = append(b, "\n      \""...)
		b = append(b, name...)
		b = append(b, "\": "...)
		b = append(b, data...)
		b = append(b, ',')
		return nil
	}
	b = append(b, "{\n      \"round\": "...)
	b = strconv.AppendInt(b, int64(r.Round), 10)
	b = append(b, ',')
	if err := field("scheduled", r.Scheduled); err != nil {
		return err
	}
	if err := field("preempted", r.Preempted); err != nil {
		return err
	}
	b = append(b, "\n      \"unschedulable\": ["...)
	for i := range r.Unschedulable {
		u := &r.Unschedulable[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n        {\n          \"job\": "...)
		b = appendJSONString(b, u.Job)
		b = append(b, ",\n          \"queue\": "...)
		b = appendJSONString(b, u.Queue)
		b = append(b, ",\n          \"reason\": "...)
		b = appendJSONString(b, u.Reason)
		b = append(b, "\n        }"...)
		if len(b) >= 64<<10 {
			js.ew.Write(b)
			b = b[:0]
		}
	}
	if len(r.Unschedulable) > 0 {
		b = append(b, "\n      "...)
	}
	b = append(b, "],"...)
	if err := field("queues", r.Queues); err != nil {
		return err
	}
	if len(r.Groups) > 0 {
		if err := field("groups", r.Groups); err != nil {
			return err
		}
	}
	b = b[:len(b)-1] // the last field's comma
	b = append(b, "\n    }"...)
	js.ew.Write(b)
	js.buf = b[:0]
	return js.ew.err
}

// appendJSONString appends s as encoding/json writes a string: as is when
// it needs no escaping (the common case, without allocating), else through
// json.Marshal itself, so the bytes are always encoding/json's.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			data, _ := json.Marshal(s) // a string always marshals
			return append(b, data...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Close ends the document; with no round written it writes the whole empty
// document. Close does not close the underlying writer.
func (js *JSONStream) Close() error {
	if js.closed {
		return js.ew.err
	}
	js.closed = true
	if js.rounds == 0 {
		io.WriteString(&js.ew, "{\n  \"rounds\": []\n}\n")
	} else {
		io.WriteString(&js.ew, "\n  ]\n}\n")
	}
	return js.ew.err
}

// countLine renders "0" or "12 (A 8, B 4)" over key(0) … key(n-1), keys in
// first-seen order.
func countLine(n int, key func(i int) string) string {
	if n == 0 {
		return "0"
	}
	var order []string
	counts := map[string]int{}
	for i := range n {
		k := key(i)
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
}

func writeReasons(ew *errWriter, us []Unschedulable) {
	type group struct {
		reason  string
		n       int
		example Unschedulable
	}
	var groups []*group
	byReason := map[string]*group{}
	for _, u := range us {
		g, ok := byReason[u.Reason]
		if !ok {
			g = &group{reason: u.Reason, example: u}
			byReason[u.Reason] = g
			groups = append(groups, g)
		}
		g.n++
	}
	for i, g := range groups {
		if i == maxReasons {
			ew.printf("    … and %d more reasons\n", len(groups)-maxReasons)
			break
		}
		reason := "(no reason given)"
		if g.reason != "" {
			reason = safetext.Name(g.reason)
		}
		ew.printf("    %d × %s (e.g. %s of %s)\n", g.n, reason, safetext.Name(g.example.Job), safetext.Name(g.example.Queue))
	}
}

// formatAllocated renders "cpu=4 memory=16Gi" with cpu first and the other
// names in byte order, or "-" when nothing is held.
func formatAllocated(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	names := slices.Sorted(maps.Keys(m))
	if i := slices.Index(names, "cpu"); i > 0 {
		names = slices.Insert(slices.Delete(names, i, i+1), 0, "cpu")
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = safetext.Name(n) + "=" + safetext.Name(m[n])
	}
	return strings.Join(parts, " ")
}

// errWriter remembers the first write error and drops later writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}
