package strictjson_test

import (
	"fmt"

	"github.com/flotilla-sched/flotilla/internal/strictjson"
)

func ExampleDecode() {
	var v struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	err := strictjson.Decode([]byte(`{"name": "a", "cuont": 2, "name": "b"}`), &v)
	fmt.Println(err)
	// Output:
	// cuont "cuont": names nothing known: unknown field; did you mean "count"?
	// name "name": is a duplicate: key appears twice in one object
}
