package queue

import "github.com/flotilla-sched/flotilla"

// The scheduling key is hashed a 64-bit word at a time: xor the word into
// the state, then apply a full avalanche (multiply, fold, multiply, fold).
// Each step is a bijection of state ^ word, so two inputs that differ in
// one word can never meet again, and inputs differing in several words
// collide only if the state cancels a word exactly (about 2^-64 for an
// unplanned pair). A last fmix64 finishes the hash.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hasher is a running scheduling-key hash. Strings are length-prefixed so
// that adjacent fields cannot run into each other.
type hasher uint64

func (h hasher) u64(v uint64) hasher {
	x := (uint64(h) ^ v) * fnvPrime
	x ^= x >> 32
	x *= 0xff51afd7ed558ccd
	return hasher(x ^ x>>29)
}

func (h hasher) str(s string) hasher {
	h = h.u64(uint64(len(s)))
	i := 0
	for ; i+8 <= len(s); i += 8 {
		h = h.u64(uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56)
	}
	if i < len(s) {
		var w uint64
		for k := i; k < len(s); k++ {
			w |= uint64(s[k]) << (8 * (k - i))
		}
		h = h.u64(w)
	}
	return h
}

// sum finishes the hash.
func (h hasher) sum() uint64 {
	x := uint64(h)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// selectorInline is the largest node selector whose keys are sorted in a
// stack buffer; larger ones are walked in key order by repeated search.
const selectorInline = 8

// selector hashes the pairs of m in key order, without allocating.
func (h hasher) selector(m map[string]string) hasher {
	h = h.u64(uint64(len(m)))
	if len(m) <= selectorInline {
		var buf [selectorInline]string
		n := 0
		for k := range m {
			if n == len(buf) {
				break // the map grew under us; the hash is meaningless anyway
			}
			// insertion sort into buf[:n]
			i := n
			for i > 0 && buf[i-1] > k {
				buf[i] = buf[i-1]
				i--
			}
			buf[i] = k
			n++
		}
		for _, k := range buf[:n] {
			h = h.str(k).str(m[k])
		}
		return h
	}
	// O(len(m)²) map reads, still cheap next to a node search, and rare.
	prev := ""
	for i := range len(m) {
		next, found := "", false
		for k := range m {
			if (i == 0 || k > prev) && (!found || k < next) {
				next, found = k, true
			}
		}
		h = h.str(next).str(m[next])
		prev = next
	}
	return h
}

// SchedulingKey is a deterministic 64-bit FNV-1a-style hash of everything that
// decides where a job can go: Requests, the class priority, the node
// selector's pairs in key order, the tolerations (in their order, an empty
// operator read as Equal), the gang's node-uniformity label and, when
// there are any, the clusters the job avoids (Job.AvoidClusters, as a set:
// in any order, though a repeated name counts again) and likewise the nodes
// it avoids (Job.AvoidNodes). A job that avoids no cluster and no node has
// the key it would have without the fields. Jobs with
// equal requirements have equal keys. It is a hash, not an identity: two
// different requirements share a key with a chance of about 2^-64 per pair,
// and a scheduler that caches failures by key would then skip a job that
// might have fitted, for one cycle. It does not allocate, and it depends on
// nothing but its arguments (not on map iteration order, not on the
// process, not on the Go release).
func SchedulingKey(j *flotilla.Job, classPriority int32) uint64 {
	h := hasher(fnvOffset)
	h = h.u64(uint64(len(j.Requests)))
	for _, r := range j.Requests {
		h = h.u64(uint64(r))
	}
	h = h.u64(uint64(uint32(classPriority)))
	h = h.selector(j.NodeSelector)
	if len(j.NodeAffinity) > 0 {
		// Tagged and ordered as written: terms and expressions in their
		// order (a different order may share no key; that costs a search).
		h = h.str("affinity").u64(uint64(len(j.NodeAffinity)))
		for i := range j.NodeAffinity {
			es := j.NodeAffinity[i].MatchExpressions
			h = h.u64(uint64(len(es)))
			for k := range es {
				h = h.str(es[k].Key).str(string(es[k].Operator)).u64(uint64(len(es[k].Values)))
				for _, v := range es[k].Values {
					h = h.str(v)
				}
			}
		}
	}
	h = h.u64(uint64(len(j.Tolerations)))
	for i := range j.Tolerations {
		t := &j.Tolerations[i]
		op := t.Operator
		if op == "" {
			op = flotilla.TolerationEqual
		}
		h = h.str(t.Key).str(string(op)).str(t.Value).str(string(t.Effect))
	}
	h = h.str(j.Gang.NodeUniformityLabel)
	if t := j.Gang.Topology; !t.IsZero() {
		// Tagged, and only when set: a job without a topology keeps the key
		// it had before topologies existed.
		h = h.str("topology").str(t.Name).str(t.Required).str(t.Preferred)
	}
	if len(j.AvoidClusters) > 0 {
		// Each name is hashed alone and the hashes added: a sum does not
		// depend on the order, and unlike xor a repeat does not cancel.
		var set uint64
		for _, c := range j.AvoidClusters {
			set += hasher(fnvOffset).str(c).sum()
		}
		h = h.u64(uint64(len(j.AvoidClusters))).u64(set)
	}
	if len(j.AvoidNodes) > 0 {
		// Tagged, so that avoiding node x and avoiding cluster x differ.
		var set uint64
		for _, n := range j.AvoidNodes {
			set += hasher(fnvOffset).str("node").str(n).sum()
		}
		h = h.u64(uint64(len(j.AvoidNodes))).u64(set)
	}
	return h.sum()
}
