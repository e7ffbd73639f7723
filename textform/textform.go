package textform

import "github.com/flotilla-sched/flotilla"

// Taint repels jobs that do not tolerate it; Key and Effect are required
// (NoSchedule, PreferNoSchedule or NoExecute).
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Toleration lets a job onto tainted nodes, with Kubernetes rules:
// Operator is "Equal" (default) or "Exists"; an empty Key requires
// Exists; Exists requires an empty Value; an empty Effect matches every
// effect.
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

// Flotilla is the library's form of t, as written.
func (t Taint) Flotilla() flotilla.Taint {
	return flotilla.Taint{Key: t.Key, Value: t.Value, Effect: flotilla.TaintEffect(t.Effect)}
}

// TaintOf is the text form of a library taint.
func TaintOf(t flotilla.Taint) Taint {
	return Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)}
}

// Taints converts taints as written; nil when there are none.
func Taints(ts []Taint) []flotilla.Taint {
	if len(ts) == 0 {
		return nil
	}
	out := make([]flotilla.Taint, len(ts))
	for i, t := range ts {
		out[i] = t.Flotilla()
	}
	return out
}

// TaintsOf is the text form of library taints; nil when there are none.
func TaintsOf(ts []flotilla.Taint) []Taint {
	if len(ts) == 0 {
		return nil
	}
	out := make([]Taint, len(ts))
	for i, t := range ts {
		out[i] = TaintOf(t)
	}
	return out
}

// Flotilla is the library's form of t, as written: an empty Operator
// stays empty (Tolerations makes the default explicit).
func (t Toleration) Flotilla() flotilla.Toleration {
	return flotilla.Toleration{Key: t.Key, Operator: flotilla.TolerationOperator(t.Operator), Value: t.Value, Effect: flotilla.TaintEffect(t.Effect)}
}

// Tolerations converts a template's tolerations, the default operator
// (Equal) made explicit; nil when there are none. flotilla.Job.Validate
// judges them.
func Tolerations(ts []Toleration) []flotilla.Toleration {
	if len(ts) == 0 {
		return nil
	}
	out := make([]flotilla.Toleration, len(ts))
	for i, t := range ts {
		out[i] = t.Flotilla()
		if out[i].Operator == "" {
			out[i].Operator = flotilla.TolerationEqual
		}
	}
	return out
}
