package server

import (
	"os"
	"strconv"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// A gopter-generated seed drives a deterministic generator of valid
// requests, so a failure names the seed that reproduces it
// (SUBMIT_PROP_SEED replays a run).
func runProperty(t *testing.T, name string, runs int, check func(seed int64) string) {
	seed := int64(20261122)
	if s, err := strconv.ParseInt(os.Getenv("SUBMIT_PROP_SEED"), 10, 64); err == nil {
		seed = s
	}
	params := gopter.DefaultTestParametersWithSeed(seed)
	params.MinSuccessfulTests = runs
	props := gopter.NewProperties(params)
	props.Property(name, prop.ForAll(check, gen.Int64()))
	props.TestingRun(t)
}
