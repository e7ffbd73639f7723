package backend_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

func TestCheckFieldsNamesEveryProblemOfJobsAndEventsOnTheirOwn(t *testing.T) {
	schema := flotilla.MustResourceSchema("cpu")
	ok := &flotilla.Job{ID: "a", Queue: "A", JobSet: "s", Requests: schema.MustParse(map[string]string{"cpu": "1"})}
	noSet := &flotilla.Job{ID: "b", Queue: "A", Requests: schema.Zero()}
	w := &backend.Write{
		Jobs: []backend.JobSpec{{Job: ok}, {}, {Job: noSet, Runtime: -1, ActiveDeadline: -1, TerminationGracePeriod: -1}},
		Events: []events.Event{
			{Queue: "A", JobSet: "s", Job: "a", Type: events.Submitted},
			{Type: events.Type(99)},
		},
	}
	want := map[string]error{
		"jobs[1]":                        flotilla.ErrRequired,
		"jobs[2].job.jobSet":             flotilla.ErrRequired,
		"jobs[2].runtime":                flotilla.ErrNegative,
		"jobs[2].activeDeadline":         flotilla.ErrNegative,
		"jobs[2].terminationGracePeriod": flotilla.ErrNegative,
		"events[1].queue":                flotilla.ErrRequired,
		"events[1].jobSet":               flotilla.ErrRequired,
		"events[1].job":                  flotilla.ErrRequired,
		"events[1].type":                 flotilla.ErrMalformed,
	}
	got := map[string]error{}
	for _, err := range w.CheckFields(schema) {
		var fe *flotilla.FieldError
		require.True(t, errors.As(err, &fe), "%v", err)
		got[fe.Field] = fe
	}
	require.Len(t, got, len(want), "%v", got)
	for f, class := range want {
		require.ErrorIs(t, got[f], class, f)
	}
	require.Empty(t, (&backend.Write{Jobs: w.Jobs[:1], Events: w.Events[:1]}).CheckFields(schema))
}
