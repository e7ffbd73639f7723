package strictjson_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
)

type inner struct {
	N int    `json:"n"`
	S string `json:"s"`
}

type doc struct {
	Seed  *uint64           `json:"seed"`
	Name  string            `json:"name"`
	Count int               `json:"count"`
	Flag  bool              `json:"flag"`
	Res   map[string]string `json:"res"`
	List  []inner           `json:"list"`
	Tags  []string          `json:"tags"`
	// Qty is read as Kubernetes reads quantities: strings or numbers.
	Qty flotilla.Quantities `json:"qty"`
}

func fields(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *flotilla.FieldError
		require.True(t, errors.As(e, &fe), "%v", e)
		out = append(out, fe.Field)
	}
	return out
}

// A type error is reported at its path and decoding goes on: every well
// typed value still reaches v, the bad ones read as absent (a map entry or
// array element as its zero value, keeping keys and indices), so the caller
// can validate the rest.
func TestDecodeReportsTypeErrorsAndDecodesTheRest(t *testing.T) {
	var v doc
	err := strictjson.Decode([]byte(`{
	  "seed": -1, "name": 7, "count": 3, "flag": true, "extra": 1,
	  "res": {"cpu": 4, "memory": "1Gi"},
	  "list": [{"n": 1.5, "s": "a"}, "x", {"n": 2, "s": "b"}],
	  "tags": ["t", 1, "u"]}`), &v)
	require.Error(t, err)
	assert.False(t, strictjson.Fatal(err))
	assert.Equal(t, []string{"seed", "name", "extra", "res.cpu", "list[0].n", "list[1]", "tags[1]"}, fields(t, err))
	assert.Equal(t, doc{
		Count: 3, Flag: true,
		Res:  map[string]string{"cpu": "", "memory": "1Gi"},
		List: []inner{{S: "a"}, {}, {N: 2, S: "b"}},
		Tags: []string{"t", "", "u"},
	}, v)
}

// Problems with the document as a whole stop decoding: v is unchanged and
// Fatal says so.
func TestDecodeFatalProblemsLeaveTheValueUnchanged(t *testing.T) {
	for _, data := range []string{``, `[1]`, `{"name": "a",}`, `{"name": "a"} {}`, `{"name": "a"`} {
		v := doc{Name: "before"}
		err := strictjson.Decode([]byte(data), &v)
		require.Error(t, err, data)
		assert.True(t, strictjson.Fatal(err), data)
		assert.Equal(t, "before", v.Name, data)
	}
	var v doc
	require.NoError(t, strictjson.Decode([]byte(`{"name": "a", "seed": null}`), &v))
	assert.False(t, strictjson.Fatal(nil))
}

// Merge keeps every decode problem and drops later ones at, or inside, a
// path decoding already reported.
func TestMergeDropsLaterProblemsAtReportedPaths(t *testing.T) {
	decoded := errors.Join(
		flotilla.Errorf("res.cpu", "4", flotilla.ErrMalformed, ""),
		flotilla.Errorf("list[1]", "x", flotilla.ErrMalformed, ""))
	later := errors.Join(
		flotilla.Errorf("res.cpu", "", flotilla.ErrRequired, ""),
		flotilla.Errorf("res.cpus", "", flotilla.ErrUnknownResource, ""),
		flotilla.Errorf("list[1].n", "", flotilla.ErrRequired, ""),
		flotilla.Errorf("list[10]", "", flotilla.ErrRequired, ""),
		flotilla.Errorf("res", "", flotilla.ErrInconsistent, ""))
	assert.Equal(t, []string{"res.cpu", "list[1]", "res.cpus", "list[10]", "res"}, fields(t, strictjson.Merge(decoded, later)))
	assert.NoError(t, strictjson.Merge(nil, nil))
	assert.Equal(t, []string{"res"}, fields(t, strictjson.Merge(nil, flotilla.Errorf("res", "", flotilla.ErrRequired, ""))))
}

// A repeated key keeps its first value, which is decoded, not left out: a
// later problem with that value is a problem of its own, and Merge keeps it.
func TestMergeKeepsLaterProblemsOfARepeatedKeysKeptValue(t *testing.T) {
	var v doc
	decoded := strictjson.Decode([]byte(`{"name": "", "name": "b", "list": [{"n": 1}], "list": []}`), &v)
	require.Equal(t, []string{"name", "list"}, fields(t, decoded))
	require.Equal(t, "", v.Name, "the first value is kept")
	later := errors.Join(
		flotilla.Errorf("name", "", flotilla.ErrRequired, ""),
		flotilla.Errorf("list[0].s", "", flotilla.ErrRequired, ""))
	assert.Equal(t, []string{"name", "list", "name", "list[0].s"}, fields(t, strictjson.Merge(decoded, later)))
}

// A string, number or boolean has no inside: a problem Decode reports with
// one covers that path alone, so a later problem at a sibling map key that
// extends it with a dot (res.nvidia.com/gpu beside res.nvidia) is kept. An
// object or array left out still covers what lies inside it.
func TestMergeCoversOnlyTheOwnPathOfABadScalar(t *testing.T) {
	var v doc
	decoded := strictjson.Decode([]byte(`{"count": 1.5, "res": {"nvidia": 1, "nvidia.com/gpu": "-1"}, "list": [1]}`), &v)
	require.Equal(t, []string{"count", "res.nvidia", "list[0]"}, fields(t, decoded))
	later := errors.Join(
		flotilla.Errorf("count", "", flotilla.ErrRequired, ""),
		flotilla.Errorf("count.x", "", flotilla.ErrRequired, ""),
		flotilla.Errorf("res.nvidia", "", flotilla.ErrMalformed, ""),
		flotilla.Errorf("res.nvidia.com/gpu", "-1", flotilla.ErrNegative, ""),
		flotilla.Errorf("res.nvidia[0]", "", flotilla.ErrMalformed, ""),
		flotilla.Errorf("list[0].n", "", flotilla.ErrRequired, ""),
		flotilla.Errorf("list[0]", "", flotilla.ErrRequired, ""))
	assert.Equal(t, []string{"count", "res.nvidia", "list[0]", "count.x", "res.nvidia.com/gpu", "res.nvidia[0]"},
		fields(t, strictjson.Merge(decoded, later)))
	for _, e := range flotilla.Problems(decoded) {
		assert.ErrorIs(t, e, flotilla.ErrMalformed)
		assert.Contains(t, e.Error(), "is malformed: want ", "the marker keeps the message")
	}
}

// TestStringsThatAreNotUTF8AreRefusedNotRewritten: encoding/json reads a
// bad byte as U+FFFD, so "q\xff" and "q\xfe" would decode to one name;
// Decode refuses each such string, value or key, at its path, with its
// bytes as written, and decodes the rest.
func TestStringsThatAreNotUTF8AreRefusedNotRewritten(t *testing.T) {
	var v struct {
		Name  string            `json:"name"`
		Count int               `json:"count"`
		Res   map[string]string `json:"res"`
		Tags  []string          `json:"tags"`
	}
	data := []byte("{\"name\": \"q\xff\", \"count\": 2, \"res\": {\"cpu\xfe\": \"1\", \"mem\": \"2\xfe\"}, \"tags\": [\"ok\", \"b\xc3\"]}")
	err := strictjson.Decode(data, &v)
	var got []string
	for _, p := range flotilla.Problems(err) {
		var fe *flotilla.FieldError
		require.True(t, errors.As(p, &fe), "%v", p)
		require.ErrorIs(t, fe, flotilla.ErrMalformed)
		got = append(got, fe.Field+"="+fe.Value)
	}
	require.ElementsMatch(t, []string{"name=q\xff", "res.cpu\ufffd=cpu\xfe", "res.mem=2\xfe", "tags[1]=b\xc3"}, got)
	require.False(t, strictjson.Fatal(err))
	require.Equal(t, 2, v.Count)
	require.Empty(t, v.Name)
	require.Equal(t, []string{"ok", ""}, v.Tags)
	require.NoError(t, strictjson.Decode([]byte(`{"name": "q\u00ff ünïcode"}`), &v), "escapes and UTF-8 are text")
	require.Equal(t, "qÿ ünïcode", v.Name)
}

// A quantities object takes strings and numbers (a number as its text);
// any other value is refused at its path, with the file's other problems.
func TestQuantitiesTakeStringsAndNumbers(t *testing.T) {
	var d doc
	require.NoError(t, strictjson.Decode([]byte(`{"qty": {"cpu": 1, "memory": "4Gi", "gpu": 2.5e1}}`), &d))
	assert.Equal(t, flotilla.Quantities{"cpu": "1", "memory": "4Gi", "gpu": "2.5e1"}, d.Qty)
	err := strictjson.Decode([]byte(`{"qty": {"cpu": true, "memory": [1], "ok": 1}, "cuont": 1}`), &d)
	require.Error(t, err)
	assert.ElementsMatch(t, []string{"qty.cpu", "qty.memory", "cuont"}, fields(t, err))
	err = strictjson.Decode([]byte(`{"res": {"cpu": 1}}`), &d)
	assert.Equal(t, []string{"res.cpu"}, fields(t, err), "a plain map of strings still wants strings")
}
