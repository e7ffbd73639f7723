// Package idindex is a hash index from string keys (job ids, client ids)
// to dense uint32 handles that the caller gives out, for tables of
// millions of entries.
//
// An Index keeps no keys and no pointers: each slot is one uint64 (a 32-bit
// hash of the key and the handle), so the garbage collector never scans
// it, and an entry costs 8 bytes per slot at a load of at most 3/4 (11 to
// 21 bytes per entry) where a map[string]*T costs about 40 bytes and is
// scanned at every collection. The caller keeps the keys: every method
// that compares keys takes a function returning the key of a handle.
//
// It is open addressing with linear probing and backward-shift deletion
// (no tombstones), growing by doubling: Find, Insert and Delete are O(1)
// expected; Insert is amortised O(1) (a growth rehashes every slot from
// the stored hashes, reading no key). Keys are hashed with hash/maphash
// under a seed drawn per Index, so that keys chosen by users cannot be
// made to collide; the seed decides where entries sit, never what any
// method returns.
//
// An Index is not safe for concurrent modification; Find may run
// concurrently with other Finds (Hash too, once the index holds an
// entry: on a new index it draws the seed). The package holds no package-level
// state and starts no goroutine.
package idindex
