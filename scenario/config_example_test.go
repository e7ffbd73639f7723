package scenario_test

import (
	"fmt"

	"github.com/flotilla-sched/flotilla/scenario"
)

// ExampleConfigFile_BuildConfig reads a service's -config file: its
// blocks are judged as a scenario's, over the file's resources or the
// caller's default.
func ExampleConfigFile_BuildConfig() {
	c, err := scenario.ParseConfigFile([]byte(`{"config": {"protectedFractionOfFairShare": 2, "requeuePreempted": false, "defaultPriorityClass": "high"},
		"priorityClasses": [{"name": "high", "priority": 100}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, settings, err := c.BuildConfig([]string{"cpu", "memory"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Schema.Names(), cfg.ProtectedFractionOfFairShare, settings.DefaultPriorityClass, c.SetsRequeuePreempted())

	c, err = scenario.ParseConfigFile([]byte(`{"config": {"defaultPriorityClass": "nope"}, "resources": ["cpu", ""]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _, err = c.BuildConfig(nil)
	fmt.Println(err)
	// Output:
	// [cpu memory] 2 high true
	// resources "": is required: a resource name is empty
	// config.defaultPriorityClass "nope": names nothing known: no such priority class
}
