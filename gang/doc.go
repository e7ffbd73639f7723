// Package gang implements gang scheduling (Armada's scheduler, "Gang
// scheduling"): sets of jobs that run all together, on one cluster, or not
// at all.
//
// A gang is the jobs sharing a Job.Gang.ID; each member carries the gang's
// Cardinality and, optionally, a NodeUniformityLabel: all members must then
// run on nodes that share one value of that label (one rack, one network
// block). The package covers a gang's whole life in the scheduler:
//
//   - ValidateSubmission checks a submit request: all members present,
//     agreeing on cardinality, queue and label, the ID never used before.
//   - An Accumulator collects members from the queued-job stream and hands
//     out a gang only once it is complete; only complete gangs are
//     scheduling candidates. Its ClassPriority, for queue ordering, is the
//     lowest of its members'.
//   - A Placer binds a complete gang into a binpack.DB inside one
//     transaction (Mark, Select and Bind per member, Rollback on failure):
//     all members in one domain (a cluster, or one label value within a
//     cluster), or none and no trace, with an Explanation naming the member
//     that did not fit, the domain's nodes counted under the filter that
//     excluded each (binpack.Explain's style), and whether the gang could
//     never fit, even on empty nodes. With DeferExplanations the node
//     counts (Explanation.Reason, an O(N·R) scan) wait until ExplainLast
//     asks for the last failure's, so a caller that keeps few of many
//     failures' explanations pays only for those.
//   - EvictionClosure widens evictions to whole gangs, for preemption.
//
// Per scheduling cycle:
//
//	var acc gang.Accumulator
//	var placer gang.Placer
//	for e := range queuedEntries {                 // in queue order
//		g, complete, err := acc.Add(e)             // err: a member that disagrees
//		if err != nil || !complete {
//			continue
//		}
//		res, err := placer.Place(db, g, queueIndex, levels) // levels[i]: bind level of g.Members[i]
//		if err != nil {
//			return err                             // bad input; db untouched
//		}
//		if res.Placed {
//			db.Forget()                            // commit; res.Nodes[i] hosts g.Members[i]
//		} else {
//			report(g, res.Why.String(schema))
//		}
//	}
//	waiting := acc.Pending()                       // incomplete gangs
//	acc.Reset()
//
// Placement rule, in short: members go largest request first, each on the
// node binpack's smallest-fit Select picks at level 0 (free capacity; no
// preemption) within the domain, and each is bound at its own level. The
// winning domain has the most members placed, then the least disruption
// (equal while nothing is preempted), then the tightest fit (the least free
// capacity left in the domain), then the first cluster, then the first label
// value, ascending; Placer.Place says how it finds it without trying every
// domain. A label that no node carries makes the gang unschedulable, with
// that reason.
//
// Topologies. A gang whose members carry a flotilla.GangTopology is
// placed in the domains of a configured topology (Placer.SetTopologies):
// the nodes that agree on a level's label and every level's above it, named
// by their path of values ("b1/r2"). With Required, only the domains of that
// level; with Preferred, the innermost level first and then outwards (never
// above Required), and, when no domain of any level holds the gang, as a
// gang without a topology. At a level, the domains whose free room (summed
// as for ranking above) holds the members' summed requests are tried
// tightest first, ties by path, and the first that packs the gang wins.
// Inside it, members go to as few domains of the next level as they can (one
// that holds them all first, else the roomiest first) and, within those, to
// nodes by binpack.DB.SelectAmong (tiers, smallest fit), which scans the
// domain's nodes instead of the index. A required level that no domain
// holds is explained by level (Cause NoDomainHasRoom: "no rack has 16 free
// nvidia.com/gpu: best rack b1/r7 has 12 (4 short)"; NoTopologyDomain), or,
// when some domain had the room but no packing fit, as MemberDoesNotFit in
// the domain where packing came closest. A topology's domains are built
// once per DB (O(N·L) map operations); a placement costs O(N·R) per level
// it looks at (a level none of whose domains is large enough, even empty,
// is skipped), plus the attempts.
//
// PlaceWithin confines a placement to some domains: with UnavoidedDomains,
// to those whose cluster no member names in Job.AvoidClusters. A scheduler
// honouring AvoidClusters makes every search for a gang for which Avoids
// is true with UnavoidedDomains first, and only when none places it, with
// AllDomains.
//
// Nothing here reads the clock, draws random numbers, starts goroutines or
// keeps package-level state. Accumulator and Placer are reusable scratch
// owned by one goroutine: after a warm-up cycle, Add, Reset and Place
// allocate nothing (Place, when a gang does not fit, allocates its
// explanation).
package gang
