package priority

import (
	"cmp"
	"math"
	"slices"
)

// The fair-share factor follows flux-accounting's weighted tree walk
// (flux-framework/flux-accounting, src/fairness/weighted_tree/
// weighted_tree.cpp and weighted_walk.cpp, and doc/components/fair-share.rst).
// The facts we follow:
//
//   - A node's weight, among its siblings, is (shares / siblings' shares) ÷
//     (usage / siblings' usage). Zero shares give weight 0; otherwise zero
//     usage gives the largest weight of all (we use +Inf). A bank's usage is
//     the sum over its subtree.
//   - Siblings are sorted by weight, highest first; at equal weight users
//     come before banks.
//   - The walk is depth first in that order. The rank starts at the number
//     of associations and each association visited takes the current rank;
//     fair-share = rank / number of associations, so the association with the
//     most room (highest weight) gets 1 and the least 1/N.
//   - Ties: consecutive user siblings of equal weight share one rank, and the
//     rank then drops by the size of the tied group (competition ranking).
//     Consecutive bank siblings of equal weight are walked as one virtual
//     bank whose children are all their children, sorted together by the
//     weights each has within its own bank, so tied banks interleave their
//     members fairly.
//   - Weights are equal when they differ by less than machine epsilon ×
//     max(|a|, |b|, 1).
//
// Where flux-accounting leaves the order of exactly equal siblings to its
// sort, we order them by name so the result is deterministic.

type wnode struct {
	name     string
	user     bool
	shares   int64
	usage    float64
	weight   float64
	children []*wnode
	assoc    *association
	tieNext  bool
}

func (t *BankTree) buildNode(name string) *wnode {
	b := t.banks[name]
	n := &wnode{name: name, shares: b.shares}
	for _, c := range b.banks {
		cn := t.buildNode(c)
		n.usage += cn.usage
		n.children = append(n.children, cn)
	}
	for _, k := range b.users {
		a := t.assocs[k]
		n.usage += a.usage
		n.children = append(n.children, &wnode{name: k.user, user: true, shares: a.shares, usage: a.usage, assoc: a})
	}
	return n
}

// rank runs the weighted walk over the whole tree and stores every
// association's rank and fair-share.
func (t *BankTree) rank() {
	if len(t.assocs) == 0 {
		return
	}
	root := t.buildNode(RootBank)
	w := walker{rank: len(t.assocs), total: len(t.assocs)}
	root.calcAndSortChildren()
	w.visit(root)
}

func weightsEqual(a, b float64) bool {
	if a == b {
		return true
	}
	threshold := 0x1p-52 * max(math.Abs(a), math.Abs(b), 1)
	return math.Abs(a-b) < threshold
}

func (n *wnode) calcAndSortChildren() {
	var shares, usage float64 // float64: a sum of int64 shares may overflow
	for _, c := range n.children {
		shares += float64(c.shares)
		usage += c.usage
	}
	for _, c := range n.children {
		switch {
		case c.shares == 0:
			c.weight = 0
		case c.usage == 0:
			c.weight = math.Inf(1)
		default:
			c.weight = (float64(c.shares) / shares) / (c.usage / usage)
		}
	}
	sortByWeight(n.children)
}

// sortByWeight orders nodes by weight, highest first. Within a run of
// neighbours whose weights are equal in the tolerant sense, users come
// before banks and names break the rest; doing this as a second pass keeps
// the sort's comparison a strict weak order.
func sortByWeight(nodes []*wnode) {
	slices.SortStableFunc(nodes, func(a, b *wnode) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	for i := 0; i < len(nodes); {
		j := i + 1
		for j < len(nodes) && weightsEqual(nodes[j-1].weight, nodes[j].weight) {
			j++
		}
		if j-i > 1 {
			slices.SortStableFunc(nodes[i:j], func(a, b *wnode) int {
				if a.user != b.user {
					if a.user {
						return -1
					}
					return 1
				}
				return cmp.Compare(a.name, b.name)
			})
		}
		i = j
	}
}

func (n *wnode) equalToNext(i int) bool {
	if i+1 >= len(n.children) {
		return false
	}
	a, b := n.children[i], n.children[i+1]
	return a.user == b.user && weightsEqual(a.weight, b.weight)
}

type walker struct {
	rank   int
	stride int
	total  int
}

func (w *walker) visit(n *wnode) {
	if len(n.children) == 0 {
		if n.user {
			w.leaf(n)
		}
		return
	}
	for _, c := range n.children {
		c.calcAndSortChildren()
	}
	for _, c := range n.tieAwareChildren() {
		w.visit(c)
	}
}

func (w *walker) leaf(n *wnode) {
	n.assoc.rank = w.rank
	n.assoc.fairShare = float64(w.rank) / float64(w.total)
	if n.tieNext {
		w.stride++
		return
	}
	w.rank -= 1 + w.stride
	w.stride = 0
}

// tieAwareChildren returns n's children with every run of equal-weight
// banks replaced by one virtual bank holding all their children.
func (n *wnode) tieAwareChildren() []*wnode {
	out := make([]*wnode, 0, len(n.children))
	var virtual *wnode
	for i, c := range n.children {
		if c.user {
			c.tieNext = n.equalToNext(i)
			out = append(out, c)
			continue
		}
		if n.equalToNext(i) {
			if virtual == nil {
				virtual = &wnode{name: c.name}
			}
			virtual.children = append(virtual.children, c.children...)
			continue
		}
		if virtual != nil {
			virtual.children = append(virtual.children, c.children...)
			sortByWeight(virtual.children)
			out = append(out, virtual)
			virtual = nil
			continue
		}
		out = append(out, c)
	}
	return out
}
