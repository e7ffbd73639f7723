package binpack_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/binpack"
)

const (
	gpuName = "nvidia.com/gpu"
	core    = int64(1000)
	gi      = int64(1) << 30
)

var schema3 = flotilla.MustResourceSchema(gpuName, "cpu", "memory")

// r3 is a (gpu, cpu, memory) vector in whole GPUs, cores and GiB.
func r3(gpu, cpu, memGi int64) flotilla.Resources {
	return flotilla.Resources{gpu, cpu * core, memGi * gi}
}

func node3(name string, gpu, cpu, memGi int64) *flotilla.Node {
	return &flotilla.Node{Name: name, Total: r3(gpu, cpu, memGi)}
}

// twoLevels are Armada's default priorities: 0 = armada-preemptible,
// 1 = armada-default.
var twoLevels = []int32{20000, 30000}

func mustNew(t testing.TB, opts binpack.Options, nodes ...*flotilla.Node) *binpack.DB {
	t.Helper()
	if opts.Schema == nil {
		opts.Schema = schema3
	}
	if opts.Levels == nil {
		opts.Levels = twoLevels
	}
	if opts.Queues == 0 {
		opts.Queues = 4
	}
	db, err := binpack.New(opts, nodes)
	require.NoError(t, err)
	return db
}

func query(req flotilla.Resources, level, queue int) *binpack.Query {
	return &binpack.Query{Requests: req, Level: level, Queue: queue, OnlyNode: -1}
}

func selectName(db *binpack.DB, q *binpack.Query) string {
	n, ok := db.Select(q)
	if !ok {
		return ""
	}
	return db.Node(n).Name
}
