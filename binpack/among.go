package binpack

// This file answers queries confined to an explicit set of nodes (a
// topology domain: one rack, one block), by a scan of those nodes rather
// than of the indexes, whose order spans the whole DB: for a domain of D
// nodes among N, a scan costs O(D·R) where a restricted Select may step
// over O(N) candidates outside the domain.

// SelectAmong is Select confined to nodes (node indices, ascending, none
// repeated): the answer Select would give with q.Constraint restricted to
// those nodes. Among the nodes that fit the query (every resource at
// q.Level, the constraint, not cordoned), the first tier (own, unused,
// joined, shared) wins, then the smallest rounded free indexed resources,
// then the lowest index. With q.OnlyNode set it is Select, and nodes is
// not consulted. ok is false when no node fits or the query is invalid.
//
// It costs O(D·R) for D nodes and allocates nothing.
func (db *DB) SelectAmong(q *Query, nodes []int32) (node int, ok bool) {
	if ok, _, _ := db.valid(q); !ok {
		return -1, false
	}
	if q.OnlyNode >= 0 {
		return db.Select(q)
	}
	c := &db.cons[q.Constraint]
	best, bestTier := -1, Tier(0)
	var bestKey [MaxIndexedResources]int64
	for _, n32 := range nodes {
		n := int(n32)
		if n < 0 || n >= len(db.nodes) || db.cordoned[n] || !c.has(n) || !db.fits(n, q.Level, q.Requests) {
			continue
		}
		t := db.Tier(n, q.Queue)
		if best >= 0 && t > bestTier {
			continue
		}
		k := db.key(n, q.Level)
		if best >= 0 && t == bestTier {
			if c := compareKeys(&k, &bestKey, db.nidx); c > 0 || (c == 0 && n > best) {
				continue
			}
		}
		best, bestTier, bestKey = n, t, k
	}
	return best, best >= 0
}

func compareKeys(a, b *[MaxIndexedResources]int64, n int) int {
	for i := 0; i < n; i++ {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return +1
		}
	}
	return 0
}

// ExplainAmong is Explain for a query confined to nodes (node indices), as
// SelectAmong answers it: only those nodes are considered and counted;
// none gives NoNodes. Like Explain it costs O(N·(R + selector + taints))
// and allocates.
func (db *DB) ExplainAmong(q *Query, nodes []int32) Reason {
	if ok, field, value := db.valid(q); !ok {
		return Reason{Kind: InvalidQuery, Node: -1, Resource: -1, Field: field, Value: value}
	}
	in := make([]bool, len(db.nodes))
	for _, n := range nodes {
		if n >= 0 && int(n) < len(in) {
			in[n] = true
		}
	}
	among := func(q *Query) (int, bool) { return db.SelectAmong(q, nodes) }
	return db.explain(q, among, q, func(n int) bool { return in[n] })
}

// IndexedOrder returns the schema indices of the indexed resources, in the
// order smallest-fit compares them (CompareIndexed's). It allocates the
// returned slice.
func (db *DB) IndexedOrder() []int { return append([]int(nil), db.idxRes[:db.nidx]...) }
