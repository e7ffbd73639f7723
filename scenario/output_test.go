package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func smallOutput() *Output {
	return &Output{Rounds: []RoundOutput{
		{
			Round:     0,
			Scheduled: []Placement{{Job: "a-0", Queue: "A", Node: "node-0"}},
			Unschedulable: []Unschedulable{
				{Job: "a-1", Queue: "A", Reason: "no-room: cpu"},
				{Job: "b-0", Queue: "B", Reason: "no-room: cpu"},
			},
			Queues: []QueueReport{
				{Name: "A", Running: 1, Queued: 1, Allocated: map[string]string{"memory": "4Gi", "cpu": "1"}, Share: 0.5, FairShare: 0.5, AdjustedFairShare: 0.5},
				{Name: "B", Queued: 1},
			},
		},
		{
			Round:     1,
			Preempted: []Preemption{{Job: "a-0", Queue: "A", Node: "node-0", Reason: ReasonFairShare}},
		},
	}}
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, smallOutput()))
	assert.Equal(t, `{
  "rounds": [
    {
      "round": 0,
      "scheduled": [
        {
          "job": "a-0",
          "queue": "A",
          "node": "node-0"
        }
      ],
      "preempted": [],
      "unschedulable": [
        {
          "job": "a-1",
          "queue": "A",
          "reason": "no-room: cpu"
        },
        {
          "job": "b-0",
          "queue": "B",
          "reason": "no-room: cpu"
        }
      ],
      "queues": [
        {
          "name": "A",
          "running": 1,
          "queued": 1,
          "allocated": {
            "cpu": "1",
            "memory": "4Gi"
          },
          "share": 0.5,
          "fairShare": 0.5,
          "adjustedFairShare": 0.5
        },
        {
          "name": "B",
          "running": 0,
          "queued": 1,
          "allocated": {},
          "share": 0,
          "fairShare": 0,
          "adjustedFairShare": 0
        }
      ]
    },
    {
      "round": 1,
      "scheduled": [],
      "preempted": [
        {
          "job": "a-0",
          "queue": "A",
          "node": "node-0",
          "reason": "fair-share"
        }
      ],
      "unschedulable": [],
      "queues": []
    }
  ]
}
`, buf.String())

	back, err := ParseOutput(buf.Bytes())
	require.NoError(t, err)
	var again bytes.Buffer
	require.NoError(t, WriteJSON(&again, back))
	assert.Equal(t, buf.String(), again.String())

	buf.Reset()
	require.NoError(t, WriteJSON(&buf, nil))
	assert.Equal(t, "{\n  \"rounds\": []\n}\n", buf.String())
}

func TestParseOutputIsStrict(t *testing.T) {
	_, err := ParseOutput([]byte(`{"rounds": [{"round": 0, "sheduled": []}]}`))
	requireFieldError(t, err, "rounds[0].sheduled", flotilla.ErrUnknownName)
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, smallOutput()))
	assert.Equal(t, `round 0: 1 scheduled, 0 preempted, 2 unschedulable; 1 running, 2 queued at the end
  QUEUE  RUNNING  QUEUED  ALLOCATED         SHARE  FAIR SHARE  ADJUSTED FAIR SHARE
  A      1        1       cpu=1 memory=4Gi  0.500  0.500       0.500
  B      0        1       -                 0.000  0.000       0.000
  scheduled:     1 (A 1)
  preempted:     0
  unschedulable: 2 (A 1, B 1)
    2 × no-room: cpu (e.g. a-1 of A)

round 1: 0 scheduled, 1 preempted, 0 unschedulable; 0 running, 0 queued at the end
  QUEUE  RUNNING  QUEUED  ALLOCATED  SHARE  FAIR SHARE  ADJUSTED FAIR SHARE
  scheduled:     0
  preempted:     1 (A fair-share 1)
  unschedulable: 0
`, buf.String())
}

func TestWriteTableLimitsReasons(t *testing.T) {
	out := &Output{Rounds: []RoundOutput{{}}}
	for i := range maxReasons + 3 {
		out.Rounds[0].Unschedulable = append(out.Rounds[0].Unschedulable,
			Unschedulable{Job: fmt.Sprint("j", i), Queue: "A", Reason: fmt.Sprint("reason ", i)})
	}
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, out))
	assert.Contains(t, buf.String(), "1 × reason 4 (e.g. j4 of A)\n    … and 3 more reasons\n")
	assert.NotContains(t, buf.String(), "reason 5")
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, errors.New("disk full")
	}
	w.after--
	return len(p), nil
}

func TestWritersReportWriteErrors(t *testing.T) {
	for after := range 4 {
		assert.EqualError(t, WriteTable(&failingWriter{after: after}, smallOutput()), "disk full", after)
	}
	assert.EqualError(t, WriteJSON(&failingWriter{}, smallOutput()), "disk full")
	assert.NoError(t, WriteTable(&strings.Builder{}, nil))
}

// TestWriteTableEscapesNamesWithControlCharacters: queue, job and node names
// reach the table Go-quoted when they hold control characters, so a name
// can neither add lines nor send terminal escapes.
func TestWriteTableEscapesNamesWithControlCharacters(t *testing.T) {
	evil := "q\x1b[31m\nforged line\tx"
	plain := &Output{Rounds: []RoundOutput{{
		Scheduled:     []Placement{{Job: "j", Queue: "Q", Node: "n"}},
		Preempted:     []Preemption{{Job: "j", Queue: "Q", Node: "n", Reason: ReasonUrgency}},
		Unschedulable: []Unschedulable{{Job: "j", Queue: "Q", Reason: "no-fit: cpu"}},
		Queues:        []QueueReport{{Name: "Q", Allocated: map[string]string{"cpu": "1"}}},
	}}}
	bad := &Output{Rounds: []RoundOutput{{
		Scheduled:     []Placement{{Job: evil, Queue: evil, Node: evil}},
		Preempted:     []Preemption{{Job: evil, Queue: evil, Node: evil, Reason: ReasonUrgency}},
		Unschedulable: []Unschedulable{{Job: evil, Queue: evil, Reason: "no-fit: " + evil}},
		Queues:        []QueueReport{{Name: evil, Allocated: map[string]string{evil: "1"}}},
	}}}
	var want, got bytes.Buffer
	require.NoError(t, WriteTable(&want, plain))
	require.NoError(t, WriteTable(&got, bad))
	assert.Equal(t, strings.Count(want.String(), "\n"), strings.Count(got.String(), "\n"), got.String())
	assert.NotContains(t, got.String(), "\x1b")
	assert.NotContains(t, got.String(), "\t")
	assert.Contains(t, got.String(), `"q\x1b[31m\nforged line\tx"`)
}

// TestJSONStreamIsWriteJSONByteForByte: streaming a run round by round gives
// exactly the document WriteJSON gives for the whole Output, for every repo
// scenario, for a hand-built output with nil lists and for no rounds at all.
func TestJSONStreamIsWriteJSONByteForByte(t *testing.T) {
	stream := func(rounds []RoundOutput) string {
		var b bytes.Buffer
		js := NewJSONStream(&b)
		for i := range rounds {
			require.NoError(t, js.WriteRound(&rounds[i]))
		}
		require.NoError(t, js.Close())
		require.NoError(t, js.Close(), "a second Close writes nothing")
		require.Error(t, js.WriteRound(&RoundOutput{}), "no round after Close")
		return b.String()
	}
	whole := func(out *Output) string {
		var b bytes.Buffer
		require.NoError(t, WriteJSON(&b, out))
		return b.String()
	}
	assert.Equal(t, whole(&Output{}), stream(nil))
	assert.Equal(t, whole(smallOutput()), stream(smallOutput().Rounds))

	files, err := filepath.Glob("../testdata/scenarios/*.json")
	require.NoError(t, err)
	n := 0
	for _, p := range files {
		if strings.HasSuffix(p, ".expect.json") || strings.HasSuffix(p, ".golden.json") {
			continue
		}
		n++
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		f, err := Parse(data)
		require.NoError(t, err, p)
		b, err := f.Build()
		require.NoError(t, err, p)
		out, err := Run(context.Background(), b)
		require.NoError(t, err, p)
		var streamed bytes.Buffer
		js := NewJSONStream(&streamed)
		require.NoError(t, RunStream(context.Background(), b, js.WriteRound), p)
		require.NoError(t, js.Close())
		assert.Equal(t, whole(out), streamed.String(), p)
		golden, err := os.ReadFile(strings.TrimSuffix(p, ".json") + ".golden.json")
		require.NoError(t, err)
		assert.Equal(t, string(golden), streamed.String(), p)
	}
	assert.NotZero(t, n)
}

// TestTableStreamStopsAtTheFirstWriteError: after a failed write, later
// rounds write nothing and report the same error.
func TestTableStreamStopsAtTheFirstWriteError(t *testing.T) {
	w := &failingWriter{after: 1}
	ts := NewTableStream(w)
	rounds := smallOutput().Rounds
	require.EqualError(t, ts.WriteRound(&rounds[0]), "disk full")
	require.EqualError(t, ts.WriteRound(&rounds[1]), "disk full")
}

// FuzzJSONStreamWritesWhatMarshalIndentWrites: the streamed unschedulable
// list is encoding/json's output byte for byte, whatever the strings hold
// (quotes, control characters, HTML characters, U+2028, invalid UTF-8).
func FuzzJSONStreamWritesWhatMarshalIndentWrites(f *testing.F) {
	f.Add("a-0", "A", "no-room: 0/1 nodes fit", 2)
	f.Add("<&>\"\\", "q\u2028", "\xff\x01\t", 1)
	f.Add("a<b", "q&", "x>y", 1)
	f.Add("é", "\u2029", "\x7f", 2)
	f.Add("", "", "", 0)
	f.Fuzz(func(t *testing.T, job, queue, reason string, n int) {
		n = max(0, min(n, 3))
		r := RoundOutput{Round: 3,
			Scheduled: []Placement{{Job: job, Queue: queue, Node: "n"}},
			Queues:    []QueueReport{{Name: queue, Allocated: map[string]string{"cpu": "1"}}}}
		for i := range n {
			r.Unschedulable = append(r.Unschedulable, Unschedulable{Job: job + strings.Repeat("x", i), Queue: queue, Reason: reason})
		}
		var streamed, whole strings.Builder
		js := NewJSONStream(&streamed)
		if err := js.WriteRound(&r); err != nil {
			t.Fatal(err)
		}
		if err := js.Close(); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&whole, &Output{Rounds: []RoundOutput{r}}); err != nil {
			t.Fatal(err)
		}
		if streamed.String() != whole.String() {
			t.Fatalf("streamed:\n%s\nwhole:\n%s", streamed.String(), whole.String())
		}
	})
}
