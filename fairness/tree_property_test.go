package fairness_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/fairness"
)

// treeTotal is a cluster of 256 cores, 2048Gi and 32 GPUs.
var treeTotal = flotilla.Resources{cores(256), gi(2048), gpus(32)}

type flatQueue struct {
	Factor float64
	Active bool
	CPU    int64
	Mem    int64
	GPU    int64
}

func genFlatQueues() gopter.Gen {
	amount := func(hi int64) gopter.Gen {
		return gen.OneGenOf(gen.Const(int64(0)), gen.Int64Range(0, hi), gen.Int64Range(0, hi/8))
	}
	return gen.SliceOf(gen.Struct(reflect.TypeOf(flatQueue{}), map[string]gopter.Gen{
		"Factor": gen.OneGenOf(gen.Const(0.0), gen.OneConstOf(0.5, 2.0, 10.0), gen.Float64Range(0.01, 10)),
		"Active": gen.Bool(),
		"CPU":    amount(cores(400)),
		"Mem":    amount(gi(3000)),
		"GPU":    amount(50),
	}))
}

// TestTreeFlatCompatibilityProperty: QUEUE-TREE.md §6. For any flat tree
// (no groups, guarantees, limits or lending limits; usage off) F and A are
// today's FairShares and AdjustedFairShares bit for bit, under both models.
func TestTreeFlatCompatibilityProperty(t *testing.T) {
	asset, err := fairness.NewAsset(seedSchema, treeTotal, nil)
	if err != nil {
		t.Fatal(err)
	}
	drf := fairness.NewDRF(treeTotal)
	props := properties(t)
	props.Property("flat tree F, A == FairShares, AdjustedFairShares exactly", prop.ForAll(
		func(qs []flatQueue, useAsset bool) string {
			m := &drf
			if useAsset {
				m = &asset
			}
			spec := fairness.TreeSpec{}
			n := len(qs)
			w, active, d := make([]float64, n), make([]bool, n), make([]float64, n)
			in := fairness.TreeInput{Active: active, Demand: make([]flotilla.Resources, n)}
			for q, x := range qs {
				spec.Queues = append(spec.Queues, fairness.NodeSpec{Name: "q" + strconv.Itoa(q), PriorityFactor: x.Factor})
				w[q] = 1
				if x.Factor != 0 {
					w[q] = 1 / x.Factor
				}
				active[q] = x.Active
				in.Demand[q] = flotilla.Resources{x.CPU, x.Mem, x.GPU}
				if x.Active {
					d[q] = m.Share(in.Demand[q])
				}
			}
			tree, err := fairness.NewTree(seedSchema, spec)
			if err != nil {
				return err.Error()
			}
			s := sharesOf(tree, m, in)
			wantF, wantA := make([]float64, n), make([]float64, n)
			fairness.FairShares(w, active, wantF)
			fairness.AdjustedFairShares(w, active, d, wantA)
			for q := range n {
				if s.FairShare[q] != wantF[q] || s.AdjustedFairShare[q] != wantA[q] {
					return "queue " + strconv.Itoa(q) + ": F " + ftoa(s.FairShare[q]) + " want " + ftoa(wantF[q]) +
						", A " + ftoa(s.AdjustedFairShare[q]) + " want " + ftoa(wantA[q])
				}
			}
			return ""
		},
		genFlatQueues(), gen.Bool(),
	))
	props.TestingRun(t)
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// randomTree is a valid random tree spec and a cycle's input, built from a
// seed (a test-local generator: gopter draws the seed).
type randomTree struct {
	spec  fairness.TreeSpec
	in    fairness.TreeInput
	model fairness.Model
}

func buildRandomTree(seed uint64) randomTree {
	rng := rand.New(rand.NewPCG(seed, 7))
	nG, nQ := rng.IntN(7), 1+rng.IntN(12)
	n := nG + nQ
	spec := fairness.TreeSpec{Groups: make([]fairness.NodeSpec, nG), Queues: make([]fairness.NodeSpec, nQ)}
	node := func(v int) *fairness.NodeSpec {
		if v < nG {
			return &spec.Groups[v]
		}
		return &spec.Queues[v-nG]
	}
	parent := make([]int, n)
	unit := flotilla.Resources{cores(8), gi(64), gpus(1)}
	for v := range n {
		s := node(v)
		s.Name = "n" + strconv.Itoa(v)
		s.PriorityFactor = []float64{0, 0.5, 2, 0.1 + 5*rng.Float64()}[rng.IntN(4)]
		parent[v] = -1
		// a group's parent is an earlier group: no cycle
		if hi := min(v, nG); hi > 0 && rng.IntN(3) > 0 {
			parent[v] = rng.IntN(hi)
			s.Parent = "n" + strconv.Itoa(parent[v])
		}
	}
	// effective guarantees, children before parents (parents have smaller indices)
	gEff := make([]flotilla.Resources, n)
	for v := range n {
		gEff[v] = make(flotilla.Resources, 3)
	}
	for v := n - 1; v >= 0; v-- {
		s := node(v)
		explicit := v >= nG && rng.IntN(2) == 0 || v < nG && rng.IntN(3) == 0
		if explicit {
			s.Guaranteed = make(flotilla.Resources, 3)
			for i := range 3 {
				if v < nG && rng.IntN(3) == 0 {
					s.Guaranteed[i] = fairness.Absent
					continue
				}
				s.Guaranteed[i] = gEff[v][i] + unit[i]*rng.Int64N(6)
				gEff[v][i] = s.Guaranteed[i]
			}
		}
		if rng.IntN(3) == 0 {
			s.Limit = make(flotilla.Resources, 3)
			for i := range 3 {
				s.Limit[i] = fairness.Absent
				if rng.IntN(3) > 0 {
					s.Limit[i] = gEff[v][i] + unit[i]*rng.Int64N(10)
				}
			}
		}
		if rng.IntN(4) == 0 {
			s.LendingLimit = make(flotilla.Resources, 3)
			for i := range 3 {
				s.LendingLimit[i] = fairness.Absent
				if rng.IntN(2) == 0 {
					s.LendingLimit[i] = rng.Int64N(gEff[v][i] + 1)
				}
			}
		}
		if p := parent[v]; p >= 0 {
			for i := range 3 {
				gEff[p][i] += gEff[v][i]
			}
		}
	}
	in := fairness.TreeInput{Demand: make([]flotilla.Resources, nQ), Active: make([]bool, nQ), Usage: make([]float64, nQ)}
	for q := range nQ {
		in.Active[q] = rng.IntN(5) > 0
		in.Usage[q] = rng.Float64()
		in.Demand[q] = flotilla.Resources{cores(float64(rng.IntN(200))), gi(rng.Int64N(1500)), rng.Int64N(20)}
		if rng.IntN(4) == 0 { // a small queue
			in.Demand[q] = flotilla.Resources{cores(float64(rng.IntN(16))), 0, rng.Int64N(2)}
		}
	}
	rt := randomTree{spec: spec, in: in, model: fairness.NewDRF(treeTotal)}
	if rng.IntN(2) == 0 {
		rt.model, _ = fairness.NewAsset(seedSchema, treeTotal, map[string]float64{"cpu": 1, "memory": 0.5, "nvidia.com/gpu": 2})
	}
	return rt
}

const treeTol = 1e-9

// treeOracle recomputes D⁺, Λ, G, r and Active from the definitions of
// QUEUE-TREE.md §4 by recursion over the spec (maps and names, no dense
// tables), and the water-filling of every group by bisection on λ.
type treeOracle struct {
	rt       randomTree
	children map[string][]string
	specs    map[string]fairness.NodeSpec
	queue    map[string]int
	d, reach map[string]float64
	g, r     map[string]float64
	gEff     map[string][]float64
	vec      map[string][]float64
	active   map[string]bool
}

func newTreeOracle(rt randomTree) *treeOracle {
	o := &treeOracle{rt: rt, children: map[string][]string{}, specs: map[string]fairness.NodeSpec{}, queue: map[string]int{},
		d: map[string]float64{}, reach: map[string]float64{}, g: map[string]float64{}, r: map[string]float64{},
		gEff: map[string][]float64{}, vec: map[string][]float64{}, active: map[string]bool{}}
	for _, s := range rt.spec.Groups {
		o.specs[s.Name] = s
		o.children[s.Parent] = append(o.children[s.Parent], s.Name)
	}
	for q, s := range rt.spec.Queues {
		o.specs[s.Name], o.queue[s.Name] = s, q
		o.children[s.Parent] = append(o.children[s.Parent], s.Name)
	}
	for _, c := range o.children[""] {
		o.visit(c)
	}
	return o
}

func (o *treeOracle) toRes(v []float64) flotilla.Resources {
	out := make(flotilla.Resources, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

func (o *treeOracle) visit(name string) {
	s, m := o.specs[name], &o.rt.model
	g, vec := make([]float64, 3), make([]float64, 3)
	var pre, childReach, childG float64
	active := false
	if q, leaf := o.queue[name]; leaf {
		childReach = math.Inf(1)
		if o.rt.in.Active[q] {
			active = true
			for i, x := range o.rt.in.Demand[q] {
				vec[i] = float64(x)
			}
			pre = m.Share(o.rt.in.Demand[q])
		}
	} else {
		for _, c := range o.children[name] {
			o.visit(c)
			childG += o.g[c]
			for i := range g {
				g[i] += o.gEff[c][i]
			}
			if o.active[c] {
				active = true
				pre += o.d[c]
				childReach += o.reach[c]
				for i := range vec {
					vec[i] += o.vec[c][i]
				}
			}
		}
	}
	for i := range g {
		if s.Guaranteed != nil && s.Guaranteed[i] != fairness.Absent {
			g[i] = float64(s.Guaranteed[i])
		}
	}
	scale := math.Inf(1)
	for i := range vec {
		if s.Limit != nil && s.Limit[i] != fairness.Absent && vec[i] > 0 {
			scale = min(scale, float64(s.Limit[i])/vec[i])
		}
	}
	d, reach := pre*min(1, scale), childReach
	if !math.IsInf(scale, 1) {
		reach = min(reach, scale*pre)
	}
	for i := range vec {
		vec[i] *= min(1, scale)
	}
	res := make([]float64, 3)
	for i := range res {
		if s.LendingLimit != nil && s.LendingLimit[i] != fairness.Absent {
			res[i] = max(0, g[i]-float64(s.LendingLimit[i]))
		}
	}
	r := m.Share(o.toRes(res))
	if r > 0 {
		active, d, reach = true, max(d, r), max(reach, r)
	}
	if !active {
		d, reach = 0, math.Inf(1)
	}
	o.d[name], o.reach[name], o.r[name], o.active[name] = d, reach, r, active
	o.g[name] = max(m.Share(o.toRes(g)), childG)
	o.gEff[name], o.vec[name] = g, vec
}

// bisect is the water-filling of one group by bisection on λ.
func bisect(B float64, floor, caps, w []float64) []float64 {
	x := make([]float64, len(floor))
	sumFloor, sumCap := 0.0, 0.0
	for j := range floor {
		sumFloor += floor[j]
		sumCap += caps[j]
	}
	if B <= 0 {
		return x
	}
	if sumFloor >= B {
		for j := range x {
			x[j] = floor[j] * B / sumFloor
		}
		return x
	}
	target := min(B, sumCap)
	at := func(l float64) float64 {
		s := 0.0
		for j := range x {
			x[j] = min(caps[j], floor[j]+l*w[j])
			s += x[j]
		}
		return s
	}
	lo, hi := 0.0, 1.0
	for at(hi) < target && hi < 1e300 {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if at(mid) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	at(hi)
	return x
}

// shares runs the top-down passes with weights weight (by name).
func (o *treeOracle) shares(weight map[string]float64, adjusted bool) map[string]float64 {
	out := map[string]float64{}
	var fill func(parent string, B float64)
	fill = func(parent string, B float64) {
		var names []string
		var floor, caps, w []float64
		for _, c := range o.children[parent] {
			out[c] = 0
			if !o.active[c] {
				continue
			}
			u := o.reach[c]
			if adjusted {
				u = o.d[c]
			}
			names, floor, caps, w = append(names, c), append(floor, min(o.g[c], u)), append(caps, u), append(w, weight[c])
		}
		for j, x := range bisect(B, floor, caps, w) {
			out[names[j]] = x
		}
		for _, c := range o.children[parent] {
			if _, group := o.queue[c]; !group && o.active[c] {
				fill(c, out[c])
			}
		}
	}
	fill("", 1)
	return out
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= treeTol*max(1, math.Abs(a), math.Abs(b))
}

func genTree() gopter.Gen { return gen.UInt64().Map(buildRandomTree) }

func TestTreeSharesProperties(t *testing.T) {
	props := properties(t)
	check := func(rt randomTree, usage bool, f func(tree *fairness.Tree, s *fairness.TreeShares) string) string {
		tree, err := fairness.NewTree(seedSchema, rt.spec)
		if err != nil {
			return "generator made an invalid tree: " + err.Error()
		}
		if !usage {
			rt.in.Usage = nil
		}
		return f(tree, sharesOf(tree, &rt.model, rt.in))
	}
	props.Property("D⁺, Λ, G, r, Active equal the definitions (recursive oracle)", prop.ForAll(
		func(rt randomTree) string {
			return check(rt, false, func(tree *fairness.Tree, s *fairness.TreeShares) string {
				o := newTreeOracle(rt)
				for v := range tree.NumNodes() {
					name := tree.Name(v)
					if !near(s.Demand[v], o.d[name]) || !near(s.LimitReach[v], o.reach[name]) ||
						!near(s.Guaranteed[v], o.g[name]) || !near(s.Reserve[v], o.r[name]) || s.Active[v] != o.active[name] {
						return name + ": D Λ G r active " + ftoa(s.Demand[v]) + " " + ftoa(s.LimitReach[v]) + " " +
							ftoa(s.Guaranteed[v]) + " " + ftoa(s.Reserve[v]) + " want " + ftoa(o.d[name]) + " " +
							ftoa(o.reach[name]) + " " + ftoa(o.g[name]) + " " + ftoa(o.r[name])
					}
				}
				return ""
			})
		}, genTree()))
	props.Property("F and A equal a bisection water-filling within 1e-9 (usage on and off)", prop.ForAll(
		func(rt randomTree, usage bool) string {
			return check(rt, usage, func(tree *fairness.Tree, s *fairness.TreeShares) string {
				o := newTreeOracle(rt)
				weight := map[string]float64{}
				for v := range tree.NumNodes() {
					weight[tree.Name(v)] = s.Weight[v]
				}
				f, a := o.shares(weight, false), o.shares(weight, true)
				for v := range tree.NumNodes() {
					name := tree.Name(v)
					if !near(s.FairShare[v], f[name]) || !near(s.AdjustedFairShare[v], a[name]) {
						return name + ": F " + ftoa(s.FairShare[v]) + " want " + ftoa(f[name]) +
							", A " + ftoa(s.AdjustedFairShare[v]) + " want " + ftoa(a[name])
					}
				}
				return ""
			})
		}, genTree(), gen.Bool()))
	props.Property("Σ children's A = min(A(parent), Σ D⁺) and Σ children's F = min(F(parent), Σ Λ)", prop.ForAll(
		func(rt randomTree, usage bool) string {
			return check(rt, usage, func(tree *fairness.Tree, s *fairness.TreeShares) string {
				for p := -1; p < tree.NumGroups(); p++ {
					budgetA, budgetF := 1.0, 1.0
					if p >= 0 {
						if !s.Active[p] {
							continue
						}
						budgetA, budgetF = s.AdjustedFairShare[p], s.FairShare[p]
					}
					var sumA, sumF, sumD, sumL float64
					for _, c := range tree.Children(p) {
						sumA += s.AdjustedFairShare[c]
						sumF += s.FairShare[c]
						if s.Active[c] {
							sumD += s.Demand[c]
							sumL += s.LimitReach[c]
						}
					}
					if !near(sumA, min(budgetA, sumD)) || !near(sumF, min(budgetF, sumL)) {
						return "group " + strconv.Itoa(p) + ": ΣA " + ftoa(sumA) + " ΣF " + ftoa(sumF)
					}
				}
				return ""
			})
		}, genTree(), gen.Bool()))
	props.Property("no node above its demand or its limit reach; inactive nodes get 0", prop.ForAll(
		func(rt randomTree, usage bool) string {
			return check(rt, usage, func(tree *fairness.Tree, s *fairness.TreeShares) string {
				for v := range tree.NumNodes() {
					a, f := s.AdjustedFairShare[v], s.FairShare[v]
					if a > s.Demand[v]*(1+treeTol) || a > s.LimitReach[v]*(1+treeTol) || f > s.LimitReach[v]*(1+treeTol) ||
						!s.Active[v] && (a != 0 || f != 0) {
						return tree.Name(v) + ": A " + ftoa(a) + " F " + ftoa(f) + " D " + ftoa(s.Demand[v]) + " Λ " + ftoa(s.LimitReach[v])
					}
				}
				return ""
			})
		}, genTree(), gen.Bool()))
	props.Property("a child whose demand reaches its guarantee gets at least its scaled guarantee Ĝ ≤ G", prop.ForAll(
		func(rt randomTree, usage bool) string {
			return check(rt, usage, func(tree *fairness.Tree, s *fairness.TreeShares) string {
				for v := range tree.NumNodes() {
					if s.GuaranteedPart[v] > s.Guaranteed[v] ||
						s.Active[v] && s.Demand[v] >= s.Guaranteed[v] && s.AdjustedFairShare[v] < s.GuaranteedPart[v]*(1-treeTol) {
						return tree.Name(v) + ": A " + ftoa(s.AdjustedFairShare[v]) + " Ĝ " + ftoa(s.GuaranteedPart[v]) +
							" G " + ftoa(s.Guaranteed[v]) + " D " + ftoa(s.Demand[v])
					}
				}
				return ""
			})
		}, genTree(), gen.Bool()))
	props.Property("usage multipliers lie in [1/(1+k), 1+k]; with every u = F⁰, F and A do not move", prop.ForAll(
		func(rt randomTree, k float64) string {
			rt.spec.UsageHalfLife, rt.spec.UsageWeight = 3600e9, k
			return check(rt, true, func(tree *fairness.Tree, s *fairness.TreeShares) string {
				for v := range tree.NumNodes() {
					if m := s.Multiplier[v]; m < 1/(1+k) || m > 1+k {
						return tree.Name(v) + ": m " + ftoa(m)
					}
				}
				// Every leaf used exactly its usage-free fair share.
				plain := sharesOf(tree, &rt.model, fairness.TreeInput{Demand: rt.in.Demand, Active: rt.in.Active})
				for q := range tree.NumQueues() {
					rt.in.Usage[q] = plain.FairShare[tree.QueueNode(q)]
				}
				s = sharesOf(tree, &rt.model, rt.in)
				for v := range tree.NumNodes() {
					if !near(s.FairShare[v], plain.FairShare[v]) || !near(s.AdjustedFairShare[v], plain.AdjustedFairShare[v]) {
						return tree.Name(v) + ": F " + ftoa(s.FairShare[v]) + " want " + ftoa(plain.FairShare[v])
					}
				}
				return ""
			})
		}, genTree(), gen.Float64Range(0, 5)))
	props.TestingRun(t)
}
