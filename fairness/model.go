package fairness

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla-sched/flotilla"
)

// Resource names the asset model treats specially: cpu is the unit every
// other resource is converted to, and the seed's default weights name cpu and
// the GPU.
const (
	ResourceCPU    = "cpu"
	ResourceGPU    = "nvidia.com/gpu"
	ResourceMemory = "memory"
)

// Kind says which cost model a Model implements.
type Kind uint8

const (
	// DominantResource is dominant-resource fairness: the cost of a vector is
	// the largest fraction of the cluster it takes of any one resource.
	DominantResource Kind = iota + 1
	// Asset is asset fairness: a weighted sum of resources, each divided by
	// its resource factor, in cpu-equivalent units.
	Asset
)

// String returns "dominant-resource" or "asset".
func (k Kind) String() string {
	switch k {
	case DominantResource:
		return "dominant-resource"
	case Asset:
		return "asset"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// term is one resource that contributes to a Model's cost.
type term struct {
	i     int     // index in the resource vector
	total float64 // cluster total of resource i, > 0
	usage float64 // asset: weight × total cpu cores (multiplies r_i/total_i)
	share float64 // asset: weight / Σ weights (multiplies r_i/total_i)
}

// Model is a resource cost model: dominant-resource fairness (NewDRF) or asset
// fairness (NewAsset). It is one concrete type so that the per-gang calls are
// short loops with no interface dispatch and no allocation.
//
// A Model is immutable after construction and safe for concurrent use. Every
// vector passed to it must be laid out by the schema of the cluster total it
// was built from (entries past that length are ignored; a shorter vector
// panics). The zero Model gives every vector cost 0.
type Model struct {
	kind  Kind
	n     int
	terms []term
}

// NewDRF returns the dominant-resource fairness model for a cluster whose
// total capacity is total:
//
//	Share(r) = max over resources i with total_i > 0 of r_i / total_i
//
// Resources the cluster does not have (total ≤ 0) are ignored: no job can be
// charged a fraction of nothing. Usage equals Share. Armada's scheduler uses
// this model by default.
func NewDRF(total flotilla.Resources) Model {
	m := Model{kind: DominantResource, n: len(total)}
	for i, t := range total {
		if t > 0 {
			m.terms = append(m.terms, term{i: i, total: float64(t)})
		}
	}
	return m
}

// DefaultAssetWeights returns the seed's asset-fairness weights relative to
// one cpu (Armada's scheduler, "Resource usage and fairness"): cpu 1,
// nvidia.com/gpu 1. Every other resource, memory included, weighs 0. The map
// is new on every call.
func DefaultAssetWeights() map[string]float64 {
	return map[string]float64{ResourceCPU: 1, ResourceGPU: 1}
}

// NewAsset returns the asset-fairness model of seeds/armada-priority.md for a
// cluster of the given schema and total capacity. Each resource r has a
// resource factor, how much of r the cluster has per cpu:
//
//	factor_r = total_r / total_cpu
//
// and a vector's usage, in cpu cores, is the weighted sum
//
//	Usage(v) = Σ_r weight_r · v_r / factor_r
//
// (a cluster of 10 cpu, 20Gi and 5 GPUs; usage 5 cpu, 2Gi, 1 GPU; all weights
// 1: 5 + 2/2 + 1/0.5 = 8). Share(v) = Usage(v) / Usage(total), the fraction of
// the whole cluster's cost.
//
// weights maps resource names to their weight relative to one cpu. A nil map
// means DefaultAssetWeights (cpu 1, nvidia.com/gpu 1, memory and everything
// else 0); a non-nil map replaces the defaults entirely, so a resource it does
// not name weighs 0 — cpu included. A resource the cluster does not have
// (total 0) costs nothing, whatever its weight: its factor would be 0. A
// weight naming a resource the schema lacks is the same: that resource has
// capacity 0 everywhere, so its weight contributes nothing (it must still be
// a finite number ≥ 0).
//
// Errors are *flotilla.FieldError values, all reported at once (joined with
// errors.Join): a nil schema (ErrRequired), a total of the wrong length
// (ErrInconsistent), a negative total (ErrNegative), cpu missing from the
// schema (ErrUnknownResource) or a total cpu of 0 (ErrOutOfRange), a
// negative weight (ErrNegative), a NaN or infinite weight (ErrOutOfRange),
// weights under which the whole cluster costs nothing (ErrOutOfRange), and
// weights so large that their sum overflows (ErrOutOfRange).
func NewAsset(schema *flotilla.ResourceSchema, total flotilla.Resources, weights map[string]float64) (Model, error) {
	if schema == nil {
		return Model{}, flotilla.Errorf("schema", "", flotilla.ErrRequired, "")
	}
	if len(total) != schema.Len() {
		return Model{}, flotilla.Errorf("total", strconv.Itoa(len(total)), flotilla.ErrInconsistent,
			"has %d entries, the schema %d", len(total), schema.Len())
	}
	var errs []error
	for i, t := range total {
		if t < 0 {
			errs = append(errs, flotilla.Errorf("total."+schema.Name(i), schema.Quantity(i, t), flotilla.ErrNegative, ""))
		}
	}
	cpu, ok := schema.Index(ResourceCPU)
	switch {
	case !ok:
		errs = append(errs, flotilla.Errorf("schema", ResourceCPU, flotilla.ErrUnknownResource,
			"asset fairness measures every resource in cpu; schema has %s", strings.Join(schema.Names(), ", ")))
	case total[cpu] <= 0:
		errs = append(errs, flotilla.Errorf("total."+ResourceCPU, schema.Quantity(cpu, total[cpu]), flotilla.ErrOutOfRange,
			"asset fairness divides by the cluster's cpu, which must be positive"))
	}
	if weights == nil {
		weights = DefaultAssetWeights()
		for name := range weights {
			if _, ok := schema.Index(name); !ok {
				delete(weights, name) // defaults name resources a schema may lack
			}
		}
	}
	w := make([]float64, schema.Len())
	names := make([]string, 0, len(weights))
	for name := range weights {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := weights[name]
		field, value := "weights."+name, strconv.FormatFloat(v, 'g', -1, 64)
		i, ok := schema.Index(name)
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			errs = append(errs, flotilla.Errorf(field, value, flotilla.ErrOutOfRange, "must be a finite number"))
		case v < 0:
			errs = append(errs, flotilla.Errorf(field, value, flotilla.ErrNegative, ""))
		case ok:
			w[i] = v
		}
	}
	if len(errs) > 0 {
		return Model{}, errors.Join(errs...)
	}

	cpuCores := float64(total[cpu])
	if schema.Unit(cpu) == flotilla.UnitMilli {
		cpuCores /= 1000
	}
	m := Model{kind: Asset, n: len(total)}
	sum := 0.0
	for i, t := range total {
		if t > 0 && w[i] > 0 {
			m.terms = append(m.terms, term{i: i, total: float64(t), usage: w[i] * cpuCores})
			sum += w[i]
		}
	}
	if sum == 0 {
		return Model{}, flotilla.Errorf("weights", "", flotilla.ErrOutOfRange,
			"no resource the cluster has weighs more than 0, so every queue would cost nothing")
	}
	if math.IsInf(sum, 0) || math.IsInf(sum*cpuCores, 0) {
		return Model{}, flotilla.Errorf("weights", strconv.FormatFloat(sum, 'g', -1, 64), flotilla.ErrOutOfRange,
			"the weights sum (times the cluster's cpu) to +Inf, so shares would be NaN")
	}
	for k := range m.terms {
		m.terms[k].share = w[m.terms[k].i] / sum
	}
	return m, nil
}

// Kind reports which cost model m implements; 0 for the zero Model.
func (m *Model) Kind() Kind { return m.kind }

// Len is the length of the vectors m was built for.
func (m *Model) Len() int { return m.n }

// Share returns the fraction of the cluster that r costs: for DRF the largest
// r_i/total_i, for asset fairness Usage(r)/Usage(total). Adding a gang to an
// allocation and calling Share is how the scheduler prices the gang. It runs
// in O(number of resources the model charges for) and never allocates.
func (m *Model) Share(r flotilla.Resources) float64 {
	if m.kind == Asset {
		s := 0.0
		for _, t := range m.terms {
			s += t.share * (float64(r[t.i]) / t.total)
		}
		return s
	}
	return m.dominant(r)
}

// Usage returns the cost of r in the model's own unit: for asset fairness,
// cpu cores (the seed's "usage 8"); for DRF, the same as Share. It never
// allocates.
func (m *Model) Usage(r flotilla.Resources) float64 {
	if m.kind == Asset {
		s := 0.0
		for _, t := range m.terms {
			s += t.usage * (float64(r[t.i]) / t.total)
		}
		return s
	}
	return m.dominant(r)
}

// Cost returns what req adds to the share of alloc, Share(alloc+req) −
// Share(alloc), computed so that it depends on alloc no more than the
// value does: under DRF, while the resource that dominates alloc+req also
// dominates alloc, it is that resource's fraction in req, the same bits
// whatever alloc is; under asset fairness, which is linear, Share(req).
// Equal units therefore cost exactly the same wherever they cost the same,
// and two sides whose standings tie do tie, rather than differ in the last
// bits of a subtraction. It never allocates.
func (m *Model) Cost(alloc, req flotilla.Resources) float64 {
	if m.kind == Asset {
		return m.Share(req)
	}
	if len(m.terms) == 0 {
		return 0
	}
	// The resource dominating alloc+req (the first of equals, as dominant
	// takes it), and alloc's share.
	top, after, before := m.terms[0], -1.0, m.dominant(alloc)
	for _, t := range m.terms {
		if v := float64(alloc[t.i]+req[t.i]) / t.total; v > after {
			top, after = t, v
		}
	}
	if float64(alloc[top.i])/top.total >= before {
		return float64(req[top.i]) / top.total
	}
	return after - before
}

// Price returns Share(alloc+req) and Cost(alloc, req), the same bits as
// the two calls, in one pass over the resources and without a scratch
// vector: what a scheduler needs of a queue's next unit. It never
// allocates.
func (m *Model) Price(alloc, req flotilla.Resources) (after, cost float64) {
	if m.kind == Asset {
		for _, t := range m.terms {
			after += t.share * (float64(alloc[t.i]+req[t.i]) / t.total)
		}
		return after, m.Share(req)
	}
	if len(m.terms) == 0 {
		return 0, 0
	}
	top := m.terms[0]
	after = float64(alloc[top.i]+req[top.i]) / top.total
	before := float64(alloc[top.i]) / top.total
	for _, t := range m.terms[1:] {
		if v := float64(alloc[t.i]+req[t.i]) / t.total; v > after {
			top, after = t, v
		}
		if v := float64(alloc[t.i]) / t.total; v > before {
			before = v
		}
	}
	if float64(alloc[top.i])/top.total >= before {
		return after, float64(req[top.i]) / top.total
	}
	return after, after - before
}

func (m *Model) dominant(r flotilla.Resources) float64 {
	if len(m.terms) == 0 {
		return 0
	}
	s := float64(r[m.terms[0].i]) / m.terms[0].total
	for _, t := range m.terms[1:] {
		if v := float64(r[t.i]) / t.total; v > s {
			s = v
		}
	}
	return s
}
