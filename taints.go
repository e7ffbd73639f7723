package flotilla

// The functions in this file sit on the hot path of the node database: they
// never allocate and take no locks.

// Tolerates reports whether t tolerates taint, with Kubernetes' rules:
//
//   - a non-empty Effect must equal the taint's effect; an empty Effect
//     matches every effect;
//   - Operator Exists ignores the value; an empty Key with Exists matches
//     every key (the "tolerate everything" toleration);
//   - Operator Equal, or empty (which means Equal), requires the same key and
//     the same value. Unlike Kubernetes' matcher, an empty Key with Equal is
//     not a wildcard: it matches only a taint with an empty key, which node
//     validation rejects (and job validation rejects the toleration, as
//     Kubernetes does);
//   - any other operator tolerates nothing.
func (t Toleration) Tolerates(taint Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	switch t.Operator {
	case TolerationExists:
		return t.Key == "" || t.Key == taint.Key
	case "", TolerationEqual:
		return t.Key == taint.Key && t.Value == taint.Value
	default:
		return false
	}
}

// TaintsTolerated reports whether a job with tolerations tols may be placed
// on a node with taints: every taint that repels must be tolerated by at
// least one toleration. NoSchedule and NoExecute taints repel;
// PreferNoSchedule never blocks a placement. A taint with any other effect
// (which node validation rejects) is treated as repelling, so that a bad
// taint fails closed. Cost is O(len(taints) · len(tols)), without
// allocation.
func TaintsTolerated(taints []Taint, tols []Toleration) bool {
	for i := range taints {
		if taints[i].Effect == TaintPreferNoSchedule {
			continue
		}
		if !tolerated(&taints[i], tols) {
			return false
		}
	}
	return true
}

func tolerated(taint *Taint, tols []Toleration) bool {
	for i := range tols {
		if tols[i].Tolerates(*taint) {
			return true
		}
	}
	return false
}

// SelectorMatches reports whether labels carry every key of selector with
// the same value. An empty or nil selector matches every node. Cost is
// O(len(selector)) map lookups, without allocation.
func SelectorMatches(selector, labels map[string]string) bool {
	if len(selector) > len(labels) {
		return false
	}
	for k, want := range selector {
		got, ok := labels[k]
		if !ok || got != want {
			return false
		}
	}
	return true
}
