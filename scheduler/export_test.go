package scheduler

// ForceTree makes s run the queue tree's code on flat worlds too, for
// tests that hold it to the flat code's results.
func ForceTree(s *Scheduler) { s.forceTree = true }

// NoTreeMemo makes s check the tree's limits and holds for every unit,
// remembering no refusal by scheduling key.
func NoTreeMemo(s *Scheduler) { s.noTreeMemo = true }
