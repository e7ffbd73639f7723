package nodesfile

import (
	"bytes"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/scenario"
)

// Parse reads a nodes file: the nodes array of a scenario file
// (docs/scenarios.md) or a whole scenario file's {"nodes": [...]}, templates expanded by count,
// validated as a scenario's nodes are.
func Parse(data []byte) ([]api.Node, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		data = append(append([]byte(`{"nodes": `), t...), '}')
	}
	var f struct {
		Nodes []scenario.NodeTemplate `json:"nodes"`
	}
	if err := strictjson.Decode(data, &f); err != nil {
		return nil, err
	}
	built, err := (&scenario.File{Nodes: f.Nodes}).Build()
	if err != nil {
		return nil, err
	}
	out := make([]api.Node, len(built.Nodes))
	for i, n := range built.Nodes {
		an := api.Node{Name: n.Name, Resources: built.Schema.Format(n.Total), Labels: n.Labels, Unschedulable: n.Unschedulable}
		for _, t := range n.Taints {
			an.Taints = append(an.Taints, api.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
		out[i] = an
	}
	return out, nil
}
