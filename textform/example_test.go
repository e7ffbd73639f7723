package textform_test

import (
	"encoding/json"
	"fmt"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/textform"
)

func ExampleTolerations() {
	var tols []textform.Toleration
	_ = json.Unmarshal([]byte(`[{"key": "gpu", "effect": "NoSchedule"}]`), &tols)
	lib := textform.Tolerations(tols)
	taints := textform.Taints([]textform.Taint{{Key: "gpu", Effect: "NoSchedule"}})
	fmt.Println(lib[0].Operator, flotilla.TaintsTolerated(taints, lib))
	// Output:
	// Equal true
}
