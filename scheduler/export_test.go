package scheduler

// ForceTree makes s run the queue tree's code on flat worlds too, for
// tests that hold it to the flat code's results.
func ForceTree(s *Scheduler) { s.forceTree = true }
