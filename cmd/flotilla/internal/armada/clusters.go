package armada

import (
	"fmt"
	"maps"
	"math"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/internal/strictjson"
	"github.com/flotilla-sched/flotilla/sim"
)

// Field names of Armada's ClusterSpec and the messages under it; pools
// and clusterGroups are the older form (pools[].clusterGroups[].clusters[],
// a cluster's name defaulting to <pool>-<group>-<index>), clusters[] with
// a pool each the newer. Both are read.
var (
	armadaClusterSpecFields  = []string{"name", "clusters", "pools", "workflowManagerDelayDistribution", "pendingDelayDistribution"}
	armadaPoolFields         = []string{"name", "clusterGroups"}
	armadaClusterGroupFields = []string{"clusters"}
	armadaClusterFields      = []string{"name", "pool", "nodeTemplates"}
	armadaNodeTemplateFields = []string{"number", "taints", "labels", "totalResources"}
	armadaResourceListFields = []string{"resources"}
	armadaTaintFields        = []string{"key", "value", "effect", "timeAdded"}
)

// Clusters is a ClusterSpec read into sim.Clusters.
type Clusters struct {
	Clusters *sim.Clusters
	// Paths puts sim's field paths (clusters[0].nodes[1].count) in the
	// file's terms (clusters[0].nodeTemplates[1].number).
	Paths PathRenamer
	// PendingMinimum and PendingTail are the file's
	// pendingDelayDistribution (see ApplyPendingDelay).
	PendingMinimum, PendingTail time.Duration
}

// ParseClusters reads Armada's ClusterSpec YAML into sim.Clusters
// and checks it (sim's Validate included); every problem is a
// *flotilla.FieldError at its YAML path, all joined. Each cluster is one
// executor; node template k of cluster c makes nodes named c-k-0, c-k-1,
// … (Armada's node ids), each labelled armadaproject.io/clusterName=c.
func ParseClusters(data []byte) (*Clusters, error) {
	var r yamlReader
	root := r.yamlRoot(data)
	if root == nil {
		return nil, r.err()
	}
	top := r.object(root, "", armadaClusterSpecFields...)
	if top == nil {
		return nil, r.err()
	}
	out := &Clusters{Clusters: &sim.Clusters{}}
	if n := top["workflowManagerDelayDistribution"]; n != nil && !yamlNull(n) {
		m, t := r.distribution(n, "workflowManagerDelayDistribution")
		if m > 0 || t > 0 {
			r.add("workflowManagerDelayDistribution", yamlValue(n), flotilla.ErrUnsupported,
				"Armada's delay before submitting a preempted job again; Flotilla requeues it at once")
		}
	}
	out.PendingMinimum, out.PendingTail = r.distribution(top["pendingDelayDistribution"], "pendingDelayDistribution")

	add := func(n *yaml.Node, cp, defaultName, defaultPool string) {
		c, ok := r.cluster(n, cp, defaultName, defaultPool)
		if !ok {
			return
		}
		if c.pool == "" {
			r.add(cp+".pool", "", flotilla.ErrRequired, "Armada's rule")
		}
		// Each pool is scheduled on its own, as Armada does: the
		// cluster's executor is in its pool.
		c.cluster.Pool = c.pool
		sp := yamlIndex("clusters", len(out.Clusters.Clusters))
		out.Paths = append(out.Paths,
			[2]string{sp + ".name", cp + ".name"},
			[2]string{sp + ".pool", cp + ".pool"},
			[2]string{sp + ".nodes", cp + ".nodeTemplates"},
			[2]string{sp, cp})
		for k := range c.cluster.Nodes {
			np, tp := yamlIndex(sp+".nodes", k), yamlIndex(cp+".nodeTemplates", k)
			out.Paths = append([][2]string{
				{np + ".name", cp + ".name"},
				{np + ".count", tp + ".number"},
				{np + ".resources", tp + ".totalResources.resources"},
				{np, tp},
			}, out.Paths...)
		}
		out.Clusters.Clusters = append(out.Clusters.Clusters, c.cluster)
	}
	for i, n := range r.list(top["clusters"], "clusters") {
		add(n, yamlIndex("clusters", i), "", "")
	}
	for i, pn := range r.list(top["pools"], "pools") {
		pp := yamlIndex("pools", i)
		pf := r.object(pn, pp, armadaPoolFields...)
		if pf == nil {
			continue
		}
		name := r.str(pf["name"], pp+".name")
		if name == "" {
			r.add(pp+".name", "", flotilla.ErrRequired, "")
		}
		for g, gn := range r.list(pf["clusterGroups"], pp+".clusterGroups") {
			gp := yamlIndex(pp+".clusterGroups", g)
			gf := r.object(gn, gp, armadaClusterGroupFields...)
			for c, cn := range r.list(gf["clusters"], gp+".clusters") {
				add(cn, yamlIndex(gp+".clusters", c), fmt.Sprintf("%s-%d-%d", name, g, c), name)
			}
		}
	}
	if len(out.Clusters.Clusters) == 0 && len(r.errs) == 0 {
		r.add("clusters", "", flotilla.ErrRequired, "at least one cluster")
	}
	// Every problem at once: sim's checks of what could be read, less
	// those about values the reader already refused.
	if err := strictjson.Merge(r.err(), flotilla.RenameFields(out.Clusters.Validate(), out.Paths.Rename)); err != nil {
		return nil, err
	}
	return out, nil
}

// armadaCluster is one of Armada's clusters with its pool.
type armadaCluster struct {
	cluster sim.Cluster
	pool    string
}

// cluster reads one of Armada's clusters; defaultName and defaultPool
// stand for absent fields (the older form's).
func (r *yamlReader) cluster(n *yaml.Node, cp, defaultName, defaultPool string) (armadaCluster, bool) {
	f := r.object(n, cp, armadaClusterFields...)
	if f == nil {
		return armadaCluster{}, false
	}
	c := armadaCluster{pool: r.str(f["pool"], cp+".pool")}
	c.cluster.Name = r.str(f["name"], cp+".name")
	if c.cluster.Name == "" {
		c.cluster.Name = defaultName
	}
	switch {
	case c.pool == "":
		c.pool = defaultPool
	case defaultPool != "" && c.pool != defaultPool:
		r.add(cp+".pool", c.pool, flotilla.ErrInconsistent, "the cluster is listed under pool %q", defaultPool)
	}
	for k, tn := range r.list(f["nodeTemplates"], cp+".nodeTemplates") {
		tp := yamlIndex(cp+".nodeTemplates", k)
		tf := r.object(tn, tp, armadaNodeTemplateFields...)
		if tf == nil {
			continue
		}
		count := int(r.integer(tf["number"], tp+".number", 0, math.MaxInt32))
		nt := sim.NodeTemplate{Name: fmt.Sprintf("%s-%d", c.cluster.Name, k), Count: &count}
		rf := r.object(tf["totalResources"], tp+".totalResources", armadaResourceListFields...)
		nt.Resources = r.stringMap(rf["resources"], tp+".totalResources.resources")
		// Armada labels every node with its cluster's name, over any
		// label of the same key.
		nt.Labels = maps.Clone(r.stringMap(tf["labels"], tp+".labels"))
		if nt.Labels == nil {
			nt.Labels = map[string]string{}
		}
		nt.Labels[armadaClusterLabel] = c.cluster.Name
		for i, xn := range r.list(tf["taints"], tp+".taints") {
			xp := yamlIndex(tp+".taints", i)
			xf := r.object(xn, xp, armadaTaintFields...)
			if xf == nil {
				continue
			}
			// timeAdded matters only to tolerationSeconds, which a
			// simulation never reaches: read and ignored.
			r.str(xf["timeAdded"], xp+".timeAdded")
			nt.Taints = append(nt.Taints, sim.Taint{
				Key: r.str(xf["key"], xp+".key"), Value: r.str(xf["value"], xp+".value"), Effect: r.str(xf["effect"], xp+".effect"),
			})
		}
		c.cluster.Nodes = append(c.cluster.Nodes, nt)
	}
	return c, true
}

// distribution reads a ShiftedExponential: its minimum and tail mean.
func (r *yamlReader) distribution(n *yaml.Node, p string) (minimum, tail time.Duration) {
	f := r.object(n, p, armadaDistributionFields...)
	return r.duration(f["minimum"], p+".minimum"), r.duration(f["tailMean"], p+".tailMean")
}
