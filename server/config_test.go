package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/internal/fakeclock"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/submit"
)

func TestConfigValidateNamesEveryFieldsProblem(t *testing.T) {
	schema := worldSchema()
	good := func() Config {
		return Config{Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema), Clock: fakeclock.New(testNow)}
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want []problem
	}{
		{name: "valid", mod: func(*Config) {}},
		{name: "no backend", mod: func(c *Config) { c.Backend = nil },
			want: []problem{{"backend", "<nil>", flotilla.ErrRequired}}},
		{name: "no clock", mod: func(c *Config) { c.Clock = nil },
			want: []problem{{"clock", "<nil>", flotilla.ErrRequired}}},
		{name: "negative lease timeout", mod: func(c *Config) { c.LeaseTimeout = -time.Second },
			want: []problem{{"leaseTimeout", "-1s", flotilla.ErrNegative}}},
		{name: "negative max attempts", mod: func(c *Config) { c.MaxAttempts = -1 },
			want: []problem{{"maxAttempts", "-1", flotilla.ErrNegative}}},
		{name: "submit rules", mod: func(c *Config) {
			c.Submit = submit.Rules{MaxTerminationGracePeriod: time.Millisecond, DefaultActiveDeadline: -time.Hour, MaxJobsPerRequest: -1}
		}, want: []problem{
			{"submitRules.maxTerminationGracePeriod", "1ms", flotilla.ErrOutOfRange},
			{"submitRules.defaultActiveDeadline", "-1h0m0s", flotilla.ErrNegative},
			{"submitRules.maxJobsPerRequest", "-1", flotilla.ErrNegative},
		}},
		{name: "scheduler", mod: func(c *Config) { c.Scheduler.DefaultPriorityClass = "nope" },
			want: []problem{{"scheduler.defaultPriorityClass", "nope", flotilla.ErrUnknownName}}},
		{name: "zero", mod: func(c *Config) { *c = Config{} }, want: []problem{
			{"scheduler.schema", "<nil>", flotilla.ErrRequired},
			{"backend", "<nil>", flotilla.ErrRequired},
			{"clock", "<nil>", flotilla.ErrRequired},
		}},
		{name: "every problem at once", mod: func(c *Config) {
			c.Backend, c.Clock, c.LeaseTimeout, c.MaxAttempts = nil, nil, -1, -2
			c.Submit.DefaultGPUActiveDeadline = -1
			c.Scheduler.DefaultPriorityClass = "nope"
		}, want: []problem{
			{"backend", "<nil>", flotilla.ErrRequired},
			{"clock", "<nil>", flotilla.ErrRequired},
			{"leaseTimeout", "-1ns", flotilla.ErrNegative},
			{"maxAttempts", "-2", flotilla.ErrNegative},
			{"submitRules.defaultGPUActiveDeadline", "-1ns", flotilla.ErrNegative},
			{"scheduler.defaultPriorityClass", "nope", flotilla.ErrUnknownName},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good()
			tc.mod(&cfg)
			err := cfg.Validate()
			srv, newErr := New(t.Context(), cfg)
			if tc.want == nil {
				require.NoError(t, err)
				require.NoError(t, newErr)
				return
			}
			requireProblems(t, err, tc.want...)
			require.Nil(t, srv)
			requireProblems(t, newErr, tc.want...)
		})
	}
}
