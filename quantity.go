package flotilla

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// Unit is what one count of a resource vector entry stands for: a
// thousandth of the resource's base unit (UnitMilli, as Kubernetes'
// MilliValue, for cpu) or one whole base unit (UnitWhole, as Kubernetes'
// Value: one byte of memory or storage, one GPU). Whole units let one int64
// entry hold 9.2·10^18 bytes (8 EiB), so that sums over 100,000 nodes of
// 4 TiB stay exact; milli-units keep fractional cpu ("500m") exact.
type Unit uint8

const (
	// UnitMilli counts thousandths of a base unit: "500m" is 500, "1" is 1000.
	UnitMilli Unit = iota + 1
	// UnitWhole counts base units: "1" is 1, "4Gi" is 4·2^30, and "500m"
	// rounds up to 1.
	UnitWhole
)

// DefaultUnit is the unit NewResourceSchema gives a resource, Kubernetes'
// rule: UnitMilli for "cpu", UnitWhole for every other resource (memory,
// ephemeral-storage, hugepages-*, nvidia.com/gpu and other extended
// resources).
func DefaultUnit(name string) Unit {
	if name == "cpu" {
		return UnitMilli
	}
	return UnitWhole
}

// String returns "milli" or "whole".
func (u Unit) String() string {
	switch u {
	case UnitMilli:
		return "milli"
	case UnitWhole:
		return "whole"
	}
	return "Unit(" + strconv.Itoa(int(u)) + ")"
}

// valid reports whether u is one of the declared units.
func (u Unit) valid() bool { return u == UnitMilli || u == UnitWhole }

// shift is the power of ten one base unit is worth in u.
func (u Unit) shift() int64 {
	if u == UnitMilli {
		return 3
	}
	return 0
}

// Parse reads a Kubernetes quantity (the grammar of ParseQuantity) as an
// exact count of u, rounding a value that is not a whole number of u away
// from zero: in UnitWhole "1.5" is 2 and "1n" is 1. Errors are as
// ParseQuantity's, ErrOutOfRange when the count does not fit an int64.
// Parse never panics; a Unit other than UnitMilli and UnitWhole reads as
// UnitWhole.
func (u Unit) Parse(s string) (int64, error) {
	q, ok := scanQuantity(s)
	if !ok {
		return 0, Errorf("quantity", s, ErrMalformed, "")
	}
	v, ok := q.scaled(u.shift())
	if !ok {
		if u == UnitMilli {
			return 0, Errorf("quantity", s, ErrOutOfRange, "milli-units overflow int64")
		}
		return 0, Errorf("quantity", s, ErrOutOfRange, "overflows int64")
	}
	return v, nil
}

// Format renders a count of u as the canonical quantity, which Parse reads
// back to the same count: in UnitMilli as FormatQuantity; in UnitWhole as
// FormatQuantity(v·1000) would (4·2^30 → "4Gi", 1536 → "1536"), without
// the overflow of that product. A quantity prints the same whatever unit
// holds it.
func (u Unit) Format(v int64) string {
	if u == UnitMilli {
		return FormatQuantity(v)
	}
	return formatBase(v, false)
}

// ParseQuantity parses a Kubernetes quantity into exact integer milli-units
// (UnitMilli.Parse): "500m" is 500, "1" is 1000, "1.5" is 1500, "4Gi" is
// 4·2^30·1000 and "2e3" is 2,000,000. Resource vectors hold each resource in
// its schema's unit: parse them with ResourceSchema.Parse or
// ResourceSchema.ParseQuantity.
//
// The grammar is Kubernetes':
//
//	quantity  ::= [sign] number suffix
//	sign      ::= "+" | "-"
//	number    ::= digits | digits "." | digits "." digits | "." digits
//	suffix    ::= binary | decimal | exponent
//	binary    ::= "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"        (2^10 … 2^60)
//	decimal   ::= "n" | "u" | "m" | "" | "k" | "M" | "G" | "T" | "P" | "E"
//	exponent  ::= ("e" | "E") [sign] digits                       (10^exponent)
//
// Digits are ASCII; no white space is allowed anywhere. A bare "E" is the exa
// suffix, "E3" an exponent.
//
// The arithmetic is exact (integers, falling back to math/big for long
// inputs); no floating point is involved. A value that is not a whole number
// of milli-units is rounded away from zero to the next milli-unit, as
// Kubernetes' MilliValue does: "1n" and "0.1m" are 1, "-1n" is -1. Zero in any
// form is 0.
//
// Errors are *FieldError with Field "quantity" and Value s: ErrMalformed for
// input outside the grammar (including the empty string), ErrOutOfRange for
// values whose milli-units do not fit in an int64 (above 9,223,372,036,854,775,807m,
// about 8Pi). ParseQuantity never panics.
func ParseQuantity(s string) (int64, error) { return UnitMilli.Parse(s) }

// FormatQuantity renders milli-units as the canonical quantity, which
// ParseQuantity reads back to exactly the same value:
//
//   - a value that is not a whole number of base units is written in
//     milli-units with the "m" suffix and no fraction: 500 → "500m",
//     1500 → "1500m", -1 → "-1m";
//   - a whole number of base units that is an exact multiple of 1024^k
//     (k = 1 … 6) is written with the largest such binary suffix:
//     4·2^30·1000 → "4Gi", 2048·1000 → "2Ki", 1024·1000·1000 → "1000Ki";
//   - any other whole number is a plain decimal integer, without decimal
//     suffixes: 1000 → "1", 1536·1000 → "1536", 1e9 (one mega-unit) →
//     "1000000", 0 → "0".
//
// Negative values carry a leading "-". The result depends on the value only,
// never on how it was written. A value of a resource vector is formatted in
// its resource's unit by ResourceSchema.Quantity.
func FormatQuantity(milli int64) string { return formatBase(milli, true) }

// formatBase renders v, a count of milli-units when milli is true and of
// base units otherwise.
func formatBase(v int64, milli bool) string {
	var buf [24]byte // "-9223372036854775808m" is 21 bytes
	b := buf[:0]
	u := uint64(v)
	if v < 0 {
		b = append(b, '-')
		u = -u // two's-complement magnitude, exact for math.MinInt64
	}
	base := u
	if milli {
		if u%1000 != 0 {
			b = strconv.AppendUint(b, u, 10)
			return string(append(b, 'm'))
		}
		base = u / 1000
	}
	k := 0
	for k < len(binarySuffixes) && base != 0 && base&(1<<10-1) == 0 {
		base >>= 10
		k++
	}
	b = strconv.AppendUint(b, base, 10)
	if k > 0 {
		b = append(b, binarySuffixes[k-1]...)
	}
	return string(b)
}

// binarySuffixes[k-1] is the suffix for 1024^k.
var binarySuffixes = [...]string{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// quantity is a parsed, not yet evaluated, quantity. Its value in base units
// is (-1)^neg · D · 10^exp10 · 2^exp2, where D is the decimal integer spelled
// by intPart followed by fracPart.
type quantity struct {
	neg      bool
	intPart  string
	fracPart string
	exp10    int64 // includes -len(fracPart)
	exp2     uint  // 0, 10, …, 60
}

// maxExponent saturates absurd exponents: any value with a larger exponent
// is out of range or rounds to ±1 whatever its exact exponent is.
const maxExponent = 1 << 50

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanQuantity splits s along the grammar; ok is false when s is not a
// quantity.
func scanQuantity(s string) (q quantity, ok bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		q.neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	q.intPart = s[start:i]
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		q.fracPart = s[start:i]
	}
	if q.intPart == "" && q.fracPart == "" {
		return q, false
	}
	suffix := s[i:]
	var exp int64
	switch suffix {
	case "":
	case "n":
		exp = -9
	case "u":
		exp = -6
	case "m":
		exp = -3
	case "k":
		exp = 3
	case "M":
		exp = 6
	case "G":
		exp = 9
	case "T":
		exp = 12
	case "P":
		exp = 15
	case "E":
		exp = 18
	case "Ki":
		q.exp2 = 10
	case "Mi":
		q.exp2 = 20
	case "Gi":
		q.exp2 = 30
	case "Ti":
		q.exp2 = 40
	case "Pi":
		q.exp2 = 50
	case "Ei":
		q.exp2 = 60
	default:
		if suffix[0] != 'e' && suffix[0] != 'E' {
			return q, false
		}
		exp, ok = scanExponent(suffix[1:])
		if !ok {
			return q, false
		}
	}
	q.exp10 = exp - int64(len(q.fracPart))
	return q, true
}

// scanExponent reads a signed decimal integer, saturating at ±maxExponent.
func scanExponent(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		if v < maxExponent {
			v = v*10 + int64(s[i]-'0')
		}
	}
	v = min(v, maxExponent)
	if neg {
		v = -v
	}
	return v, true
}

// pow10 holds 10^0 … 10^19, every power of ten that fits a uint64.
var pow10 = [...]uint64{
	1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// digitAt returns digit i of intPart followed by fracPart.
func (q *quantity) digitAt(i int) byte {
	if i < len(q.intPart) {
		return q.intPart[i] - '0'
	}
	return q.fracPart[i-len(q.intPart)] - '0'
}

// scaled evaluates q in units of 10^-shift base units (shift 3: milli-units,
// 0: base units), rounding away from zero; ok is false on int64 overflow.
func (q *quantity) scaled(shift int64) (int64, bool) {
	n := len(q.intPart) + len(q.fracPart)
	lead := 0
	for lead < n && q.digitAt(lead) == 0 {
		lead++
	}
	sig := n - lead // significant digits
	if sig == 0 {
		return 0, true
	}
	e := q.exp10 + shift // value in units = D · 10^e · 2^exp2
	if sig <= 19 && -19 <= e && e <= 19 {
		var d uint64
		for i := lead; i < n; i++ {
			d = d*10 + uint64(q.digitAt(i))
		}
		mag, ok := scaleUint64(d, e, q.exp2)
		if !ok {
			return 0, false
		}
		return signed(mag, q.neg)
	}
	return q.scaledBig(lead, sig, e)
}

// scaleUint64 returns ceil(d · 10^e · 2^exp2) for -19 ≤ e ≤ 19 and
// exp2 ≤ 60, with ok false when it exceeds a uint64.
func scaleUint64(d uint64, e int64, exp2 uint) (uint64, bool) {
	if e >= 0 {
		hi, lo := bits.Mul64(d, pow10[e])
		if hi != 0 || (exp2 > 0 && lo>>(64-exp2) != 0) {
			return 0, false
		}
		return lo << exp2, true
	}
	var hi, lo uint64 = 0, d
	if exp2 > 0 {
		hi, lo = d>>(64-exp2), d<<exp2
	}
	div := pow10[-e]
	if hi >= div {
		return 0, false // quotient ≥ 2^64
	}
	quo, rem := bits.Div64(hi, lo, div)
	if rem != 0 {
		if quo == math.MaxUint64 {
			return 0, false
		}
		quo++
	}
	return quo, true
}

// signed applies the sign to a magnitude, with ok false outside int64.
func signed(mag uint64, neg bool) (int64, bool) {
	if neg {
		if mag > 1<<63 {
			return 0, false
		}
		return int64(-mag), true // -(1<<63) wraps to math.MinInt64, as wanted
	}
	if mag > math.MaxInt64 {
		return 0, false
	}
	return int64(mag), true
}

// scaledBig is scaled for inputs too long for 64-bit arithmetic. The work is
// bounded by the length of the input: hopeless exponents are decided without
// computing.
func (q *quantity) scaledBig(lead, sig int, e int64) (int64, bool) {
	if e >= 0 && int64(sig)+e > 20 {
		return 0, false // ≥ 10^20 > MaxInt64
	}
	if e < 0 && -e > int64(sig)+20 {
		// 0 < D·2^exp2 < 10^sig · 2^60 < 10^(sig+19) < 10^-e: the magnitude is
		// a nonzero fraction of one unit, which rounds up to 1.
		return signed(1, q.neg)
	}
	digits := make([]byte, 0, sig)
	for i := lead; i < len(q.intPart)+len(q.fracPart); i++ {
		digits = append(digits, '0'+q.digitAt(i))
	}
	v, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return 0, false // unreachable: digits are ASCII digits
	}
	v.Lsh(v, q.exp2)
	ten := big.NewInt(10)
	if e >= 0 {
		v.Mul(v, new(big.Int).Exp(ten, big.NewInt(e), nil))
	} else {
		rem := new(big.Int)
		v.QuoRem(v, new(big.Int).Exp(ten, big.NewInt(-e), nil), rem)
		if rem.Sign() != 0 {
			v.Add(v, big.NewInt(1))
		}
	}
	if !v.IsUint64() {
		return 0, false
	}
	return signed(v.Uint64(), q.neg)
}
