package memory

// recBlockLen is how many records a block of a recStore holds: 1024 (88
// KiB), so that a backend wastes at most one partly filled block.
const (
	recBlockShift = 10
	recBlockLen   = 1 << recBlockShift
)

// recStore holds every stored job's record, in the order stored, in
// blocks of recBlockLen records each allocated whole: a record never
// moves once added, so a *jobRec stays valid whatever is added after it.
// A record's handle is its position; the indexes (byID, a queue's
// clients) and the job sets' job lists name records by handle, holding no
// pointers for the collector to scan.
type recStore struct {
	blocks []*[recBlockLen]jobRec
	n      int
}

// len is the number of records.
func (s *recStore) len() int { return s.n }

// at returns the record of handle h, h < len.
func (s *recStore) at(h uint32) *jobRec { return &s.blocks[h>>recBlockShift][h&(recBlockLen-1)] }

// add appends a zero record and returns its handle and the record.
func (s *recStore) add() (uint32, *jobRec) {
	h := uint32(s.n)
	if int(h)>>recBlockShift == len(s.blocks) {
		s.blocks = append(s.blocks, new([recBlockLen]jobRec))
	}
	s.n++
	return h, s.at(h)
}
