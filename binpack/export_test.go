package binpack

import "fmt"

// SetJoinedWalk sets the longest list of a queue's nodes Select walks for
// the joined tier (0: always scan the index).
func (db *DB) SetJoinedWalk(n int) { db.joinedWalk = n }

// Verify checks the indexes against the dense arrays: every uncordoned node
// is in tier[l] iff it has at most one user and in all[l] iff it has at
// least one, each under its current key; nothing else is indexed.
func (db *DB) Verify() error {
	for l := 0; l < db.nlev; l++ {
		db.tierIx[l].flush(db, l)
		db.allIx[l].flush(db, l)
		wantTier, wantAll := 0, 0
		for n := range db.nodes {
			if db.cordoned[n] {
				continue
			}
			o, k := db.owner(n), db.key(n, l)
			if o != ownerShared {
				wantTier++
				if !db.tierIx[l].tree.Has(item{k: k, owner: o, node: int32(n)}) {
					return fmt.Errorf("level %d: node %d (owner %d, key %v) missing from tier index", l, n, o, k)
				}
			}
			if o != ownerUnused {
				wantAll++
				if !db.allIx[l].tree.Has(item{k: k, node: int32(n)}) {
					return fmt.Errorf("level %d: node %d (key %v) missing from all index", l, n, k)
				}
			}
		}
		if db.tierIx[l].tree.Len() != wantTier || db.allIx[l].tree.Len() != wantAll {
			return fmt.Errorf("level %d: tier index has %d items (want %d), all index %d (want %d)",
				l, db.tierIx[l].tree.Len(), wantTier, db.allIx[l].tree.Len(), wantAll)
		}
	}
	return nil
}

func (db *DB) Dump(l int) {
	db.tierIx[l].flush(db, l)
	db.allIx[l].flush(db, l)
	db.tierIx[l].tree.Ascend(func(it item) bool { fmt.Printf("tier l%d %+v\n", l, it); return true })
	db.allIx[l].tree.Ascend(func(it item) bool { fmt.Printf("all  l%d %+v\n", l, it); return true })
	fmt.Println("bits", db.cons[3].bits)
}
