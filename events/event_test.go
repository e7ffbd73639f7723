package events

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEventJSONIsServiceForm(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 3, 120_000_000, time.UTC)
	for _, tc := range []struct {
		name string
		e    Event
		want string
	}{
		{"leased", Event{Seq: 17, Time: at, Queue: "A", JobSet: "s1", Job: "01JD", Type: Leased, Cluster: "c1", Node: "c1-n3", Attempt: 1},
			`{"seq":17,"time":"2026-11-22T10:00:03.120Z","queue":"A","jobSet":"s1","job":"01JD","type":"leased","cluster":"c1","node":"c1-n3","attempt":1}`},
		{"succeeded carries exit code 0", Event{Seq: 18, Time: at, Queue: "A", JobSet: "s1", Job: "01JD", Type: Succeeded},
			`{"seq":18,"time":"2026-11-22T10:00:03.120Z","queue":"A","jobSet":"s1","job":"01JD","type":"succeeded","exitCode":0}`},
		{"failed", Event{Seq: 19, Time: at.In(time.FixedZone("x", 3600)), Queue: "A", JobSet: "s1", Job: "01JD", Type: Failed, ExitCode: 2, Reason: "exit code 2"},
			`{"seq":19,"time":"2026-11-22T10:00:03.120Z","queue":"A","jobSet":"s1","job":"01JD","type":"failed","reason":"exit code 2","exitCode":2}`},
		{"preempted and requeued", Event{Seq: 20, Time: at, Queue: "A", JobSet: "s1", Job: "01JD", Type: Preempted, Reason: "fair-share", Requeued: true},
			`{"seq":20,"time":"2026-11-22T10:00:03.120Z","queue":"A","jobSet":"s1","job":"01JD","type":"preempted","reason":"fair-share","requeued":true}`},
		{"reprioritized carries priority 0 too", Event{Seq: 21, Time: at, Queue: "A", JobSet: "s1", Job: "01JD", Type: Reprioritized, Reason: "by ops"},
			`{"seq":21,"time":"2026-11-22T10:00:03.120Z","queue":"A","jobSet":"s1","job":"01JD","type":"reprioritized","reason":"by ops","priority":0}`},
		{"reprioritized", Event{Seq: 22, Time: at, Queue: "A", JobSet: "s1", Job: "01JD", Type: Reprioritized, Priority: 4},
			`{"seq":22,"time":"2026-11-22T10:00:03.120Z","queue":"A","jobSet":"s1","job":"01JD","type":"reprioritized","priority":4}`},
		{"run-failed carries its exit code, rule and avoidNode", Event{Seq: 23, Time: at, Queue: "A", JobSet: "s1", Job: "01JD", Type: RunFailed,
			Cluster: "c1", Node: "c1-n3", Attempt: 1, Reason: "exit code 137 (oom): rule 1, retry 1 of 3", ExitCode: 137, Rule: 1, AvoidNode: true},
			`{"seq":23,"time":"2026-11-22T10:00:03.120Z","queue":"A","jobSet":"s1","job":"01JD","type":"run-failed","cluster":"c1","node":"c1-n3","attempt":1,"reason":"exit code 137 (oom): rule 1, retry 1 of 3","exitCode":137,"rule":1,"avoidNode":true}`},
	} {
		b, err := json.Marshal(tc.e)
		require.NoError(t, err, tc.name)
		assert.JSONEq(t, tc.want, string(b), tc.name)
		assert.Equal(t, tc.want, string(b), "%s: field order is SERVICE.md's", tc.name)
		var back Event
		require.NoError(t, json.Unmarshal(b, &back), tc.name)
		assert.True(t, tc.e.Time.Equal(back.Time), tc.name)
		back.Time = tc.e.Time
		assert.Equal(t, tc.e, back, tc.name)
	}
}

func TestEventJSONRejectsUnknownTypeAndBadTime(t *testing.T) {
	for name, in := range map[string]string{
		"unknown type":     `{"seq":1,"time":"2026-11-22T10:00:03.120Z","type":"exploded"}`,
		"missing type":     `{"seq":1,"time":"2026-11-22T10:00:03.120Z"}`,
		"bad time":         `{"seq":1,"time":"yesterday","type":"leased"}`,
		"negative attempt": `{"seq":1,"time":"2026-11-22T10:00:03.120Z","type":"leased","attempt":-1}`,
		"rule too big":     `{"seq":1,"time":"2026-11-22T10:00:03.120Z","type":"run-failed","rule":33}`,
	} {
		var e Event
		assert.Error(t, json.Unmarshal([]byte(in), &e), name)
	}
}

func TestTypeNamesRoundTrip(t *testing.T) {
	for _, ty := range Types() {
		got, err := ParseType(ty.String())
		require.NoError(t, err)
		assert.Equal(t, ty, got)
	}
	assert.Len(t, Types(), 12, "SERVICE.md names twelve event types")
	_, err := Type(0).MarshalText()
	assert.Error(t, err)
}

// FuzzEventJSON: decoding never panics, and what decodes re-encodes to a
// fixed point.
func FuzzEventJSON(f *testing.F) {
	f.Add(`{"seq":17,"time":"2026-11-22T10:00:03.120Z","queue":"A","jobSet":"s1","job":"01JD","type":"leased","cluster":"c1","node":"c1-n3","attempt":1}`)
	f.Add(`{"seq":1,"time":"2026-11-22T10:00:03Z","type":"failed","exitCode":-1,"requeued":true}`)
	f.Add(`{"type":"cancel-requested","time":"2026-11-22T10:00:03.123456789+05:00"}`)
	f.Fuzz(func(t *testing.T, in string) {
		var e Event
		if json.Unmarshal([]byte(in), &e) != nil {
			return
		}
		b1, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode it: %v", in, err)
		}
		var back Event
		if err := json.Unmarshal(b1, &back); err != nil {
			t.Fatalf("cannot decode own output %s: %v", b1, err)
		}
		b2, _ := json.Marshal(back)
		if string(b1) != string(b2) {
			t.Fatalf("not a fixed point:\n%s\n%s", b1, b2)
		}
	})
}

// TestEventJSONRefusesTimesOutsideFourDigitYears: SERVICE.md's time form
// has a four-digit year, so an event whose time in UTC falls outside years
// 0 to 9999 is not encoded (an error), and a decoded time that would fall
// there once in UTC is refused, so what decodes always encodes and reads
// back.
func TestEventJSONRefusesTimesOutsideFourDigitYears(t *testing.T) {
	for name, at := range map[string]time.Time{
		"year 10000": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		"year -1":    time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		_, err := json.Marshal(Event{Seq: 1, Time: at, Queue: "A", JobSet: "s", Job: "j", Type: Leased})
		assert.Error(t, err, name)
	}
	for name, in := range map[string]string{
		"past 9999 in UTC": `{"seq":1,"time":"9999-12-31T23:00:00-05:00","queue":"A","jobSet":"s","job":"j","type":"leased"}`,
		"before 0 in UTC":  `{"seq":1,"time":"0000-01-01T00:30:00+01:00","queue":"A","jobSet":"s","job":"j","type":"leased"}`,
	} {
		var e Event
		assert.Error(t, json.Unmarshal([]byte(in), &e), name)
	}
	// The edges themselves are fine.
	for _, at := range []time.Time{time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)} {
		b, err := json.Marshal(Event{Seq: 1, Time: at, Queue: "A", JobSet: "s", Job: "j", Type: Leased})
		require.NoError(t, err)
		var back Event
		require.NoError(t, json.Unmarshal(b, &back), string(b))
		assert.True(t, at.Equal(back.Time), string(b))
	}
}
