package flotilla_test

import (
	"errors"
	"fmt"

	"github.com/flotilla-sched/flotilla"
)

func ExampleParseQuantity() {
	for _, q := range []string{"500m", "4Gi", "1.5", "2e3", "1M"} {
		milli, _ := flotilla.ParseQuantity(q)
		fmt.Println(q, "=", milli, "milli-units")
	}
	// Output:
	// 500m = 500 milli-units
	// 4Gi = 4294967296000 milli-units
	// 1.5 = 1500 milli-units
	// 2e3 = 2000000 milli-units
	// 1M = 1000000000 milli-units
}

// Bad input names the field and the value, and every problem is reported.
func ExampleResourceSchema_Parse() {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	r, _ := schema.Parse("requests", map[string]string{"cpu": "250m", "memory": "1Gi"})
	fmt.Println(schema.String(r))

	_, err := schema.Parse("jobs[3].requests", map[string]string{"cpu": "-1", "gpu": "1"})
	var fe *flotilla.FieldError
	fmt.Println(errors.As(err, &fe), errors.Is(err, flotilla.ErrNegative), errors.Is(err, flotilla.ErrUnknownResource))
	fmt.Println(err)
	// Output:
	// cpu=250m memory=1Gi
	// true true true
	// jobs[3].requests.cpu "-1": must not be negative
	// jobs[3].requests.gpu "gpu": names an unknown resource: known: cpu, memory
}
