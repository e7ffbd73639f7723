package flotilla

import (
	"fmt"
	"slices"
)

// NodeSelectorOperator is the operator of a NodeSelectorRequirement, as in
// Kubernetes' node affinity.
type NodeSelectorOperator string

// The operators Flotilla honours. Kubernetes' Gt and Lt are not supported
// (Validate refuses them).
const (
	// NodeSelectorIn: the node has the key with one of Values.
	NodeSelectorIn NodeSelectorOperator = "In"
	// NodeSelectorNotIn: the node lacks the key, or its value is none of
	// Values.
	NodeSelectorNotIn NodeSelectorOperator = "NotIn"
	// NodeSelectorExists: the node has the key, whatever its value.
	NodeSelectorExists NodeSelectorOperator = "Exists"
	// NodeSelectorDoesNotExist: the node lacks the key.
	NodeSelectorDoesNotExist NodeSelectorOperator = "DoesNotExist"
)

// NodeSelectorRequirement is one expression over a node's labels.
type NodeSelectorRequirement struct {
	Key      string
	Operator NodeSelectorOperator
	// Values: one or more for In and NotIn, none for Exists and
	// DoesNotExist.
	Values []string
}

// NodeSelectorTerm is a conjunction: a node matches when it matches every
// expression. An empty term is invalid (Kubernetes matches nothing with it).
type NodeSelectorTerm struct {
	MatchExpressions []NodeSelectorRequirement
}

// Matches reports whether labels satisfy the requirement. Without
// allocation.
func (r *NodeSelectorRequirement) Matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Operator {
	case NodeSelectorIn:
		return ok && slices.Contains(r.Values, v)
	case NodeSelectorNotIn:
		return !ok || !slices.Contains(r.Values, v)
	case NodeSelectorExists:
		return ok
	case NodeSelectorDoesNotExist:
		return !ok
	default:
		return false
	}
}

// AffinityMatches reports whether labels satisfy a required node affinity:
// at least one term matches (terms are ORed, a term's expressions ANDed),
// as Kubernetes' requiredDuringSchedulingIgnoredDuringExecution. No terms
// match every node. Without allocation.
func AffinityMatches(terms []NodeSelectorTerm, labels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	for i := range terms {
		if termMatches(&terms[i], labels) {
			return true
		}
	}
	return false
}

func termMatches(t *NodeSelectorTerm, labels map[string]string) bool {
	if len(t.MatchExpressions) == 0 {
		return false
	}
	for i := range t.MatchExpressions {
		if !t.MatchExpressions[i].Matches(labels) {
			return false
		}
	}
	return true
}

// validateAffinity adds the problems of a job's node affinity to v.
func validateAffinity(v *validator, p string, terms []NodeSelectorTerm) {
	for i, t := range terms {
		tp := fmt.Sprintf("%s.nodeAffinity[%d]", p, i)
		if len(t.MatchExpressions) == 0 {
			v.add(Errorf(tp+".matchExpressions", "[]", ErrRequired, "a term needs at least one expression"))
		}
		for k, r := range t.MatchExpressions {
			ep := fmt.Sprintf("%s.matchExpressions[%d]", tp, k)
			if r.Key == "" {
				v.add(Errorf(ep+".key", "", ErrRequired, "a label key"))
			}
			switch r.Operator {
			case NodeSelectorIn, NodeSelectorNotIn:
				if len(r.Values) == 0 {
					v.add(Errorf(ep+".values", "[]", ErrRequired, "%s needs at least one value", r.Operator))
				}
			case NodeSelectorExists, NodeSelectorDoesNotExist:
				if len(r.Values) > 0 {
					v.add(Errorf(ep+".values", fmt.Sprint(r.Values), ErrInconsistent, "%s takes no values", r.Operator))
				}
			default:
				v.add(Errorf(ep+".operator", string(r.Operator), ErrUnknownName, "want In, NotIn, Exists or DoesNotExist"))
			}
		}
	}
}

// affinityValid is validateAffinity's allocation-free yes/no.
func affinityValid(terms []NodeSelectorTerm) bool {
	for _, t := range terms {
		if len(t.MatchExpressions) == 0 {
			return false
		}
		for _, r := range t.MatchExpressions {
			if r.Key == "" {
				return false
			}
			switch r.Operator {
			case NodeSelectorIn, NodeSelectorNotIn:
				if len(r.Values) == 0 {
					return false
				}
			case NodeSelectorExists, NodeSelectorDoesNotExist:
				if len(r.Values) > 0 {
					return false
				}
			default:
				return false
			}
		}
	}
	return true
}
