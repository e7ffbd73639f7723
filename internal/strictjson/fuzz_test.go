package strictjson_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
)

// FuzzDecodeAgreesWithEncodingJSON: on any input, Decode never panics and
// every problem it reports is a *flotilla.FieldError; a document it accepts
// whole is one encoding/json accepts too, decoded to the same value (the
// oracle: strictness only adds refusals, it never changes a value).
func FuzzDecodeAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"seed": 7, "name": "a", "count": -3, "flag": true, "res": {"cpu": "1"}, "list": [{"n": 1, "s": "x"}], "tags": ["a", null]}`,
		`{"name": "a", "name": "b"}`,
		`{"cuont": 1, "list": [{"n": "1"}]}`,
		`{"count": 1e3, "seed": -1}`,
		`{"count": 99999999999999999999}`,
		`{"res": {"a": 1}, "tags": {}}`,
		`{"qty": {"cpu": 1, "memory": "4Gi", "gpu": 0.5e1, "x": null}}`,
		`{"qty": {"cpu": true, "memory": [1]}, "name": "a"}`,
		`{} {}`, `[]`, ``, `null`, `{"list": [null, {"s": null}]}`,
		"{\"name\": \"q\xff\", \"res\": {\"cpu\xfe\": \"1\"}, \"tags\": [\"b\xc3\"]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got doc
		err := strictjson.Decode(data, &got)
		if err != nil {
			for _, e := range flotilla.Problems(err) {
				var fe *flotilla.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("problem %v is not a *flotilla.FieldError", e)
				}
			}
			return
		}
		var want doc
		if jerr := json.Unmarshal(data, &want); jerr != nil {
			t.Fatalf("Decode accepted %q, encoding/json refuses it: %v", data, jerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %+v, encoding/json gives %+v", data, got, want)
		}
	})
}
