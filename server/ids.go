package server

import (
	"crypto/rand"
	"encoding/binary"
	"io"
	"sync"
)

// crockford is the alphabet of ULIDs (Crockford's base 32: no I, L, O, U).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewULIDs returns an IDSource of ULIDs: 26 characters, the first ten the
// clock's milliseconds, the rest 80 random bits from entropy (nil means
// crypto/rand). Ids sort by time; within one millisecond, and when the
// clock goes back, the random part of the previous id is incremented, so
// ids from one source are strictly increasing and never repeat. It is
// safe for concurrent use.
func NewULIDs(clock Clock, entropy io.Reader) IDSource {
	if entropy == nil {
		entropy = rand.Reader
	}
	var (
		mu     sync.Mutex
		lastMS uint64
		hi     uint16 // random bits 79…64
		lo     uint64 // random bits 63…0
	)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		ms := uint64(clock.Now().UnixMilli())
		if ms > lastMS || (lastMS == 0 && hi == 0 && lo == 0) {
			var b [10]byte
			if _, err := io.ReadFull(entropy, b[:]); err != nil {
				// No entropy: count up from the previous id instead.
				lo++
			} else {
				hi, lo = binary.BigEndian.Uint16(b[:2]), binary.BigEndian.Uint64(b[2:])
			}
			lastMS = max(ms, lastMS)
		} else {
			lo++
			if lo == 0 {
				hi++
				if hi == 0 {
					lastMS++ // the random part wrapped: move to the next millisecond
				}
			}
		}
		return encodeULID(lastMS, hi, lo)
	}
}

// encodeULID writes 48 bits of milliseconds and 80 random bits as 26
// base-32 characters, most significant first.
func encodeULID(ms uint64, hi uint16, lo uint64) string {
	var out [26]byte
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
	return string(out[:])
}
