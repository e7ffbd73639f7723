package server

import (
	"crypto/rand"
	"encoding/binary"
	"io"
	"strings"
	"sync"

	"github.com/flotilla-sched/flotilla/submit"
)

// crockford is the alphabet of ULIDs (Crockford's base 32: no I, L, O, U).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ulidLen is the length of a ULID.
const ulidLen = 26

// NewULIDs returns an IDSource of ULIDs: 26 characters, the first ten the
// clock's milliseconds, the rest 80 random bits from entropy (nil means
// crypto/rand). Ids sort by time; within one millisecond, and when the
// clock goes back, the random part of the previous id is incremented, so
// ids from one source are strictly increasing and never repeat. It is
// safe for concurrent use.
func NewULIDs(clock Clock, entropy io.Reader) submit.IDSource {
	return newULIDSource(clock, entropy).next
}

// ulidSource is NewULIDs's state. A service that makes its own ULIDs
// (Config.NewID nil) draws a request's ids with batch.
type ulidSource struct {
	clock   Clock
	entropy io.Reader

	mu     sync.Mutex
	lastMS uint64
	hi     uint16 // random bits 79…64
	lo     uint64 // random bits 63…0
}

func newULIDSource(clock Clock, entropy io.Reader) *ulidSource {
	if entropy == nil {
		entropy = rand.Reader
	}
	return &ulidSource{clock: clock, entropy: entropy}
}

// advance moves to the next id at clock reading ms. Call with mu held.
func (u *ulidSource) advance(ms uint64) {
	if ms > u.lastMS || (u.lastMS == 0 && u.hi == 0 && u.lo == 0) {
		var b [10]byte
		if _, err := io.ReadFull(u.entropy, b[:]); err != nil {
			// No entropy: count up from the previous id instead.
			u.lo++
		} else {
			u.hi, u.lo = binary.BigEndian.Uint16(b[:2]), binary.BigEndian.Uint64(b[2:])
		}
		u.lastMS = max(ms, u.lastMS)
		return
	}
	u.lo++
	if u.lo == 0 {
		u.hi++
		if u.hi == 0 {
			u.lastMS++ // the random part wrapped: move to the next millisecond
		}
	}
}

// next returns one id.
func (u *ulidSource) next() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.advance(uint64(u.clock.Now().UnixMilli()))
	return string(appendULID(make([]byte, 0, ulidLen), u.lastMS, u.hi, u.lo))
}

// batch returns n ids, the ids n calls of next would return at one clock
// reading, as slices of one string (one allocation, not n).
func (u *ulidSource) batch(n int) []string {
	if n <= 0 {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	ms := uint64(u.clock.Now().UnixMilli())
	var b strings.Builder
	b.Grow(n * ulidLen)
	var one [ulidLen]byte
	for range n {
		u.advance(ms)
		b.Write(appendULID(one[:0], u.lastMS, u.hi, u.lo))
	}
	all, out := b.String(), make([]string, n)
	for i := range out {
		out[i] = all[i*ulidLen : (i+1)*ulidLen]
	}
	return out
}

// appendULID appends 48 bits of milliseconds and 80 random bits as 26
// base-32 characters, most significant first, to dst.
func appendULID(dst []byte, ms uint64, hi uint16, lo uint64) []byte {
	var out [ulidLen]byte
	// 130 bits: 2 leading zero bits, 48 of time, 80 of randomness.
	// Time: characters 0…9 hold bits 49…0 of ms (ms < 2^48).
	for i := 9; i >= 0; i-- {
		out[i] = crockford[ms&31]
		ms >>= 5
	}
	// Randomness: characters 10…25 hold the 80 bits, 5 per character.
	for i := 25; i >= 10; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | uint64(hi&31)<<59
		hi >>= 5
	}
	return append(dst, out[:]...)
}
