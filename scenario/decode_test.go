package scenario

import (
	"github.com/flotilla-sched/flotilla/internal/strictjson"

	"errors"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStrictJSON(t *testing.T) {
	const node = `"nodes": [{"name": "n", "resources": {"cpu": "4"}}], "queues": [{"name": "A"}]`
	cases := []struct {
		name   string
		data   string
		field  string
		err    error
		detail string // substring of the message, when given
	}{
		{
			name:   "typo in a nested field",
			data:   `{` + node + `, "rounds": [{"submit": [{"id": "a", "queue": "A", "requests": {"cpu": "1"}}, {"id": "b", "queue": "A", "cuont": 3, "requests": {"cpu": "1"}}]}]}`,
			field:  "rounds[0].submit[1].cuont",
			err:    flotilla.ErrUnknownName,
			detail: `did you mean "count"?`,
		},
		{
			name:   "unknown top-level field",
			data:   `{` + node + `, "nodez": []}`,
			field:  "nodez",
			err:    flotilla.ErrUnknownName,
			detail: `did you mean "nodes"?`,
		},
		{
			name:   "field names are case-sensitive",
			data:   `{"Nodes": [{"name": "n", "resources": {"cpu": "4"}}]}`,
			field:  "Nodes",
			err:    flotilla.ErrUnknownName,
			detail: `did you mean "nodes"?`,
		},
		{
			name:   "unknown field with no near match lists the known ones",
			data:   `{` + node + `, "config": {"zzzzzzzz": 1}}`,
			field:  "config.zzzzzzzz",
			err:    flotilla.ErrUnknownName,
			detail: "known fields: fairness, resourceWeights",
		},
		{
			name:  "repeated key",
			data:  `{"nodes": [{"name": "n", "resources": {"cpu": "4", "cpu": "8"}}]}`,
			field: "nodes[0].resources.cpu",
			err:   flotilla.ErrDuplicate,
		},
		{
			name:   "string where a number belongs",
			data:   `{` + node + `, "rounds": [{"submit": [{"id": "a", "queue": "A", "count": "4", "requests": {"cpu": "1"}}]}]}`,
			field:  "rounds[0].submit[0].count",
			err:    flotilla.ErrMalformed,
			detail: "want a number",
		},
		{
			name:   "fractional count",
			data:   `{` + node + `, "rounds": [{"submit": [{"id": "a", "queue": "A", "count": 1.5, "requests": {"cpu": "1"}}]}]}`,
			field:  "rounds[0].submit[0].count",
			err:    flotilla.ErrMalformed,
			detail: "whole number",
		},
		{
			name:  "negative job priority",
			data:  `{` + node + `, "rounds": [{"submit": [{"id": "a", "queue": "A", "priority": -1, "requests": {"cpu": "1"}}]}]}`,
			field: "rounds[0].submit[0].priority",
			err:   flotilla.ErrNegative,
		},
		{
			name:   "job priority beyond uint32",
			data:   `{` + node + `, "rounds": [{"submit": [{"id": "a", "queue": "A", "priority": 4294967296, "requests": {"cpu": "1"}}]}]}`,
			field:  "rounds[0].submit[0].priority",
			err:    flotilla.ErrOutOfRange,
			detail: "[0, 4294967295]",
		},
		{
			name:  "class priority beyond int32",
			data:  `{` + node + `, "priorityClasses": [{"name": "x", "priority": 3000000000}]}`,
			field: "priorityClasses[0].priority",
			err:   flotilla.ErrOutOfRange,
		},
		{
			name:  "negative seed",
			data:  `{` + node + `, "config": {"seed": -1}}`,
			field: "config.seed",
			err:   flotilla.ErrNegative,
		},
		{
			name:  "huge float",
			data:  `{` + node + `, "config": {"evictionProbability": 1e400}}`,
			field: "config.evictionProbability",
			err:   flotilla.ErrOutOfRange,
		},
		{
			name:   "object where a list belongs",
			data:   `{"nodes": {"name": "n"}}`,
			field:  "nodes",
			err:    flotilla.ErrMalformed,
			detail: "want an array",
		},
		{
			name:  "number where a bool belongs",
			data:  `{"nodes": [{"name": "n", "unschedulable": 1, "resources": {"cpu": "4"}}]}`,
			field: "nodes[0].unschedulable",
			err:   flotilla.ErrMalformed,
		},
		{
			name:  "top level is not an object",
			data:  `[]`,
			field: RootField,
			err:   flotilla.ErrMalformed,
		},
		{
			name:   "syntax error with position",
			data:   "{\n  \"nodes\": [,]\n}",
			field:  RootField,
			err:    flotilla.ErrMalformed,
			detail: "line 2, column 13",
		},
		{
			name:   "truncated",
			data:   `{"nodes": [`,
			field:  RootField,
			err:    flotilla.ErrMalformed,
			detail: "unexpected end",
		},
		{
			name:   "trailing data",
			data:   `{` + node + `} {}`,
			field:  RootField,
			err:    flotilla.ErrMalformed,
			detail: "data after the top-level value at line 1, column",
		},
		{
			name:  "empty",
			data:  " \n",
			field: RootField,
			err:   flotilla.ErrRequired,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.data))
			assert.Nil(t, f)
			fe := requireFieldError(t, err, tc.field, tc.err)
			requireAllFieldErrors(t, err)
			if tc.detail != "" {
				assert.Contains(t, fe.Error(), tc.detail)
			}
		})
	}
}

func TestParseReportsEveryDecodeProblem(t *testing.T) {
	data := `{"nodes": [{"name": "n", "cuont": 2, "resources": {"cpu": true}}],
	          "queues": [{"name": "A", "priorityFactr": 2}],
	          "rounds": [{"submit": [{"id": "a", "queue": "A", "requests": {"cpu": "1"}, "gnag": {}}]}]}`
	_, err := Parse([]byte(data))
	requireFieldError(t, err, "nodes[0].cuont", flotilla.ErrUnknownName)
	requireFieldError(t, err, "nodes[0].resources.cpu", flotilla.ErrMalformed)
	requireFieldError(t, err, "queues[0].priorityFactr", flotilla.ErrUnknownName)
	requireFieldError(t, err, "rounds[0].submit[0].gnag", flotilla.ErrUnknownName)
	assert.Len(t, leaves(err), 4)
}

func TestParseTypoMessage(t *testing.T) {
	data := `{"nodes": [{"name": "n", "resources": {"cpu": "4"}}], "queues": [{"name": "A"}],
	          "rounds": [{"submit": [{"id": "a", "queue": "A", "requests": {"cpu": "1"}},
	                                 {"id": "b", "queue": "A", "cuont": 3, "requests": {"cpu": "1"}}]}]}`
	_, err := Parse([]byte(data))
	require.Error(t, err)
	assert.Equal(t, `rounds[0].submit[1].cuont "cuont": names nothing known: unknown field; did you mean "count"?`, err.Error())
}

func TestParseAcceptsNullAsAbsent(t *testing.T) {
	data := `{"config": null, "priorityClasses": null,
	          "nodes": [{"name": "n", "count": null, "labels": null, "resources": {"cpu": "4"}}],
	          "queues": [{"name": "A", "priorityFactor": null}],
	          "rounds": [{"submit": [{"id": "a", "queue": "A", "gang": null, "requests": {"cpu": "1"}}], "finish": null}]}`
	f, err := Parse([]byte(data))
	require.NoError(t, err)
	b, err := f.Build()
	require.NoError(t, err)
	assert.Equal(t, "n", b.Nodes[0].Name)
	assert.Equal(t, 1.0, b.Queues[0].PriorityFactor)
	assert.Equal(t, "a", b.Rounds[0].Submit[0].ID)
}

func TestSuggest(t *testing.T) {
	known := []string{"id", "queue", "jobSet", "count", "priorityClass", "requests", "nodeSelector"}
	for key, want := range map[string]string{
		"cuont":         "count",
		"count":         "count",
		"Queue":         "queue",
		"jobset":        "jobSet",
		"priorityclass": "priorityClass",
		"request":       "requests",
		"nodeSelectr":   "nodeSelector",
		"ix":            "id",
		"zzz":           "",
		"":              "",
	} {
		assert.Equal(t, want, strictjson.Suggest(key, known), key)
	}
}

// TestParseReportsARepeatedKeyAsDuplicateWithItsPath: a key given twice in
// one object is ErrDuplicate, with the key's path as the field.
func TestParseReportsARepeatedKeyAsDuplicateWithItsPath(t *testing.T) {
	_, err := Parse([]byte(`{"config": {}, "config": {}, "nodes": [{"name": "n", "resources": {"cpu": "1"}}]}`))
	var fe *flotilla.FieldError
	if !errors.Is(err, flotilla.ErrDuplicate) || !errors.As(err, &fe) || fe.Field != "config" {
		t.Errorf("err = %v", err)
	}
}

// A value of the wrong type (here "seed": -1 into a uint64, and a boolean
// where a quantity belongs) is one problem among the others: the rest
// of the file is still decoded and validated, and every problem is
// reported at once. A problem at a mistyped value's own path (the value
// reads as absent) is not reported twice.
func TestParseReportsTypeErrorsWithEveryOtherProblem(t *testing.T) {
	data := `{
  "config": {"seed": -1, "fairness": "fifo", "evictionProbability": 2, "roundDuration": "soon"},
  "nodes": [{"name": "n", "resources": {"cpu": true, "memory": "1Gi"}, "taints": [{"key": "k"}]}],
  "queues": [{"name": "A", "priorityFactor": -1}, {"name": "A"}],
  "rounds": [{"submit": [{"id": "a", "queue": "C", "requests": {"cpu": "1"}}]}]
}`
	_, err := Parse([]byte(data))
	requireAllFieldErrors(t, err)
	want := []struct {
		field string
		class error
	}{
		{"config.seed", flotilla.ErrNegative},
		{"nodes[0].resources.cpu", flotilla.ErrMalformed},
		{"config.fairness", flotilla.ErrUnknownName},
		{"config.evictionProbability", flotilla.ErrOutOfRange},
		{"config.roundDuration", flotilla.ErrMalformed},
		{"nodes[0].taints[0].effect", flotilla.ErrRequired},
		{"queues[0].priorityFactor", flotilla.ErrNegative},
		{"queues[1].name", flotilla.ErrDuplicate},
		{"rounds[0].submit[0].queue", flotilla.ErrUnknownName},
	}
	for _, w := range want {
		requireFieldError(t, err, w.field, w.class)
	}
	assert.Len(t, leaves(err), len(want), "%v", err)
}

// A mistyped value hides only the problems at its own path or inside it,
// not those of a sibling key that merely starts with its name and a dot
// (resource names and label keys hold dots: "nvidia" and "nvidia.com/gpu").
func TestParseTypeErrorHidesNoProblemOfADottedSiblingKey(t *testing.T) {
	_, err := Parse([]byte(`{"nodes": [{"name": "n", "resources": {"cpu": "1", "nvidia": true, "nvidia.com/gpu": "-1"}}]}`))
	requireFieldError(t, err, "nodes[0].resources.nvidia", flotilla.ErrMalformed)
	requireFieldError(t, err, "nodes[0].resources.nvidia.com/gpu", flotilla.ErrNegative)
}

// Quantities may be JSON numbers wherever a scenario takes them: a node's
// resources, a job's requests, a queue's quotas.
func TestParseReadsNumbersAsQuantities(t *testing.T) {
	f, err := Parse([]byte(`{"nodes": [{"name": "n", "resources": {"cpu": 8, "memory": "16Gi"}}],
	  "queues": [{"name": "A", "guaranteed": {"cpu": 2}}],
	  "rounds": [{"submit": [{"id": "a", "queue": "A", "requests": {"cpu": 0.5}}]}]}`))
	require.NoError(t, err)
	assert.Equal(t, flotilla.Quantities{"cpu": "8", "memory": "16Gi"}, f.Nodes[0].Resources)
	assert.Equal(t, flotilla.Quantities{"cpu": "2"}, f.Queues[0].Guaranteed)
	assert.Equal(t, flotilla.Quantities{"cpu": "0.5"}, f.Rounds[0].Submit[0].Requests)
	_, err = f.Build()
	require.NoError(t, err)
}
