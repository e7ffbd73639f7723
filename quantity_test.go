package flotilla

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseQuantity(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{
		{"500m", 500},
		{"4Gi", 4294967296000},
		{"1.5", 1500},
		{"2e3", 2000000},
		{"1M", 1e9},
		{"1Mi", 1048576000},
		{"1n", 1},
		{"-1", -1000},
		{"0", 0},
		{"-0", 0},
		{"+0.0", 0},
		{"0Ei", 0},
		{"0e999999999999999999999999", 0},
		{"1", 1000},
		{"+1", 1000},
		{".5", 500},
		{"1.", 1000},
		{"1.e3", 1000000},
		{"0.1m", 1},
		{"0.001", 1},
		{"0.0011", 2},
		{"1u", 1},
		{"1000u", 1},
		{"1001u", 2},
		{"999999n", 1},
		{"1000000n", 1},
		{"1000001n", 2},
		{"-1n", -1},
		{"-0.1m", -1},
		{"-1.5", -1500},
		{"1k", 1e6},
		{"1G", 1e12},
		{"1T", 1e15},
		{"1P", 1e18},
		{"9.2P", 9.2e18},
		{"0.0000092E", 9.2e15},
		{"1Ki", 1024000},
		{"1.5Ki", 1536000},
		{".5Ki", 512000},
		{"1Ti", 1 << 40 * 1000},
		{"8Pi", 8 << 50 * 1000},
		{"0.0009765625Ki", 1000},
		{"0.000000001Ki", 1}, // 1.024e-6 base units rounds up
		{"1e3", 1e6},
		{"1E3", 1e6},
		{"1e+3", 1e6},
		{"1e-3", 1},
		{"1e-4", 1},
		{"15e-4", 2},
		{"-1e-9", -1},
		{"1e-1000000", 1},
		{"1e-99999999999999999999999999", 1},
		{"-1e-99999999999999999999999999", -1},
		{"1e15", 1e18},
		{"9223372036854775807m", math.MaxInt64},
		{"-9223372036854775808m", math.MinInt64},
		{"9223372036854775.807", math.MaxInt64},
		{"-9223372036854775.808", math.MinInt64},
		{"9223372036854775.8069", math.MaxInt64},
		{"00000000000000000000000000000001", 1000},
		{"0.00000000000000000000000000000000001", 1},
		{"1234567890123456789012345678901234567890e-30", 1234567890124},
		{"1234567890123456789012345678901234567890e-40", 124},
		{"1234567890123456789012345678901234567890e-45", 1},
		{"123456789012345678901234567890.1e-20", 1234567890124},
		{"0.0000000000000000000000000000000000001Ei", 1},
		{"1000000000000000000000000000000000000000000000000e-50", 10},
		{"1000000000000000000000000000000000000000000000000e-47", 10000},
	}
	for _, c := range cases {
		got, err := ParseQuantity(c.in)
		if assert.NoError(t, err, c.in) {
			assert.Equal(t, c.want, got, c.in)
		}
	}
}

func TestParseQuantityErrors(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"", ErrMalformed},
		{"1x", ErrMalformed},
		{"1.2.3", ErrMalformed},
		{"e3", ErrMalformed},
		{"1Gi1", ErrMalformed},
		{".", ErrMalformed},
		{"-", ErrMalformed},
		{"+", ErrMalformed},
		{"+-1", ErrMalformed},
		{"--1", ErrMalformed},
		{" 1", ErrMalformed},
		{"1 ", ErrMalformed},
		{"1 Gi", ErrMalformed},
		{"1e", ErrMalformed},
		{"1e+", ErrMalformed},
		{"1E-", ErrMalformed},
		{"1e1.5", ErrMalformed},
		{"1ee3", ErrMalformed},
		{"1K", ErrMalformed},
		{"1ki", ErrMalformed},
		{"1gi", ErrMalformed},
		{"1mi", ErrMalformed},
		{"1Gib", ErrMalformed},
		{"Gi", ErrMalformed},
		{"0x10", ErrMalformed},
		{"1_000", ErrMalformed},
		{"١", ErrMalformed}, // Arabic-Indic digit one
		{"NaN", ErrMalformed},
		{"Inf", ErrMalformed},
		{"1e3m", ErrMalformed},
		{"9223372036854775808m", ErrOutOfRange},
		{"-9223372036854775809m", ErrOutOfRange},
		{"9223372036854775.8071", ErrOutOfRange},
		{"1Ei", ErrOutOfRange},
		{"9Pi", ErrOutOfRange},
		{"10E", ErrOutOfRange},
		{"1E", ErrOutOfRange},
		{"1e16", ErrOutOfRange},
		{"1e99999999999999999999999", ErrOutOfRange},
		{"-1e99999999999999999999999", ErrOutOfRange},
		{"100000000000000000000000000000000000000000", ErrOutOfRange},
		{"18446744073709551616", ErrOutOfRange},
	}
	for _, c := range cases {
		v, err := ParseQuantity(c.in)
		require.Error(t, err, "%q parsed as %d", c.in, v)
		assert.ErrorIs(t, err, c.want, c.in)
		var fe *FieldError
		if assert.ErrorAs(t, err, &fe, c.in) {
			assert.Equal(t, "quantity", fe.Field)
			assert.Equal(t, c.in, fe.Value)
		}
	}
}

func TestFormatQuantity(t *testing.T) {
	cases := []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{1, "1m"},
		{500, "500m"},
		{-1, "-1m"},
		{1000, "1"},
		{-1000, "-1"},
		{1500, "1500m"},
		{1023000, "1023"},
		{1024000, "1Ki"},
		{1536000, "1536"},
		{2048000, "2Ki"},
		{3072000, "3Ki"},
		{1048576000, "1Mi"},
		{4294967296000, "4Gi"},
		{-4294967296000, "-4Gi"},
		{1024000000, "1000Ki"},
		{1e9, "1000000"},
		{8 << 50 * 1000, "8Pi"},
		{math.MaxInt64, "9223372036854775807m"},
		{math.MinInt64, "-9223372036854775808m"},
		{math.MinInt64 / 1000 * 1000, "-9223372036854775"},
	}
	for _, c := range cases {
		got := FormatQuantity(c.in)
		assert.Equal(t, c.want, got, "%d", c.in)
		back, err := ParseQuantity(got)
		require.NoError(t, err, got)
		assert.Equal(t, c.in, back, got)
	}
}

// bigMilli is an independent oracle: the exact rational value of a quantity
// in milli-units, rounded away from zero, as a big.Int.
func bigMilli(q quantity) *big.Int { return bigScaled(q, 3) }

// bigScaled is the oracle in units of 10^-shift base units.
func bigScaled(q quantity, shift int64) *big.Int {
	digits := strings.TrimLeft(q.intPart+q.fracPart, "0")
	if digits == "" {
		return new(big.Int)
	}
	num, _ := new(big.Int).SetString(digits, 10)
	num.Lsh(num, q.exp2)
	den := big.NewInt(1)
	e := q.exp10 + shift
	ten := big.NewInt(10)
	if e >= 0 {
		num.Mul(num, new(big.Int).Exp(ten, big.NewInt(e), nil))
	} else {
		den.Exp(ten, big.NewInt(-e), nil)
	}
	quo, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	if rem.Sign() != 0 {
		quo.Add(quo, big.NewInt(1))
	}
	if q.neg {
		quo.Neg(quo)
	}
	return quo
}

// TestParseQuantityOracle compares the fast and big paths against the exact
// rational oracle on inputs around the int64 boundary and the switch-over
// between the two paths.
func TestParseQuantityOracle(t *testing.T) {
	mantissas := []string{
		"1", "9", "10", "999", "1.5", "0.001", "123456789", "9999999999999999999",
		"10000000000000000000", "9223372036854775807", "9223372036854775808",
		"18446744073709551615", "18446744073709551616", "0.0000000000000000001",
		"12345678901234567890123", "1.00000000000000000000000001",
	}
	suffixes := []string{"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	for e := -45; e <= 25; e++ {
		suffixes = append(suffixes, "e"+big.NewInt(int64(e)).String())
	}
	maxI, minI := big.NewInt(math.MaxInt64), big.NewInt(math.MinInt64)
	for _, m := range mantissas {
		for _, sign := range []string{"", "-"} {
			for _, suf := range suffixes {
				s := sign + m + suf
				q, ok := scanQuantity(s)
				require.True(t, ok, s)
				want := bigMilli(q)
				got, err := ParseQuantity(s)
				if want.Cmp(maxI) > 0 || want.Cmp(minI) < 0 {
					assert.ErrorIs(t, err, ErrOutOfRange, "%s = %s", s, want)
					continue
				}
				if assert.NoError(t, err, s) {
					assert.Equal(t, want.Int64(), got, s)
				}
			}
		}
	}
}

// TestUnitWholeParseOracle: in whole units a quantity is its exact value in
// base units rounded away from zero, up to the whole int64 range (8Ei), on
// both the fast and the big paths.
func TestUnitWholeParseOracle(t *testing.T) {
	mantissas := []string{
		"1", "9", "1.5", "0.001", "4", "5", "7.99", "8", "123456789", "9223372036854775807",
		"9223372036854775808", "18446744073709551616", "0.0000000000000000001", "12345678901234567890123",
	}
	suffixes := []string{"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	for e := -45; e <= 25; e++ {
		suffixes = append(suffixes, "e"+big.NewInt(int64(e)).String())
	}
	maxI, minI := big.NewInt(math.MaxInt64), big.NewInt(math.MinInt64)
	for _, m := range mantissas {
		for _, sign := range []string{"", "-"} {
			for _, suf := range suffixes {
				s := sign + m + suf
				q, ok := scanQuantity(s)
				require.True(t, ok, s)
				want := bigScaled(q, 0)
				got, err := UnitWhole.Parse(s)
				if want.Cmp(maxI) > 0 || want.Cmp(minI) < 0 {
					assert.ErrorIs(t, err, ErrOutOfRange, "%s = %s", s, want)
					continue
				}
				if assert.NoError(t, err, s) {
					assert.Equal(t, want.Int64(), got, s)
				}
			}
		}
	}
}

// TestUnitParse: each unit reads the same quantity at its own scale, a finer
// amount rounding up to one unit; whole units reach 8Ei where milli-units
// stop just above 8Pi.
func TestUnitParse(t *testing.T) {
	cases := []struct {
		in       string
		milli    int64
		whole    int64
		milliErr error
		wholeErr error
	}{
		{in: "1", milli: 1000, whole: 1},
		{in: "500m", milli: 500, whole: 1},
		{in: "1.5", milli: 1500, whole: 2},
		{in: "-1.5", milli: -1500, whole: -2},
		{in: "1n", milli: 1, whole: 1},
		{in: "0", milli: 0, whole: 0},
		{in: "4Gi", milli: 4 << 30 * 1000, whole: 4 << 30},
		{in: "4Ti", milli: 4 << 40 * 1000, whole: 4 << 40},
		{in: "400000Ti", milliErr: ErrOutOfRange, whole: 400000 << 40},
		{in: "8Pi", milli: 8 << 50 * 1000, whole: 8 << 50},
		{in: "9Pi", milliErr: ErrOutOfRange, whole: 9 << 50},
		{in: "7Ei", milliErr: ErrOutOfRange, whole: 7 << 60},
		{in: "8Ei", milliErr: ErrOutOfRange, wholeErr: ErrOutOfRange},
		{in: "-8Ei", milliErr: ErrOutOfRange, whole: math.MinInt64},
		{in: "x", milliErr: ErrMalformed, wholeErr: ErrMalformed},
	}
	for _, c := range cases {
		for _, u := range []struct {
			unit Unit
			want int64
			err  error
		}{{UnitMilli, c.milli, c.milliErr}, {UnitWhole, c.whole, c.wholeErr}} {
			got, err := u.unit.Parse(c.in)
			if u.err != nil {
				var fe *FieldError
				require.ErrorAs(t, err, &fe, "%s in %v", c.in, u.unit)
				assert.ErrorIs(t, err, u.err, "%s in %v", c.in, u.unit)
				assert.Equal(t, "quantity", fe.Field)
				assert.Equal(t, c.in, fe.Value)
				continue
			}
			require.NoError(t, err, "%s in %v", c.in, u.unit)
			assert.Equal(t, u.want, got, "%s in %v", c.in, u.unit)
		}
	}
}

// TestUnitWholeFormat: a quantity prints the same in whole units as in
// milli-units, and values beyond the milli range print too.
func TestUnitWholeFormat(t *testing.T) {
	cases := []struct {
		v    int64
		want string
	}{
		{0, "0"}, {1, "1"}, {-1, "-1"}, {1536, "1536"}, {1024, "1Ki"}, {4 << 30, "4Gi"},
		{4 << 40, "4Ti"}, {100_000 * 4 << 40, "400000Ti"}, {7 << 60, "7Ei"},
		{math.MaxInt64, "9223372036854775807"}, {math.MinInt64, "-8Ei"}, {1_000_000, "1000000"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, UnitWhole.Format(c.v), "%d", c.v)
	}
	assert.Equal(t, "1500m", UnitMilli.Format(1500))
	assert.Equal(t, "milli", UnitMilli.String())
	assert.Equal(t, "whole", UnitWhole.String())
	assert.Equal(t, "Unit(0)", Unit(0).String())
	assert.Equal(t, UnitMilli, DefaultUnit("cpu"))
	for _, name := range []string{"memory", "ephemeral-storage", "hugepages-2Mi", "nvidia.com/gpu", "example.com/foo"} {
		assert.Equal(t, UnitWhole, DefaultUnit(name), name)
	}
}

// TestUnitWholeRoundTripProperty: Parse(Format(v)) is v in whole units over
// all int64, and Format agrees with FormatQuantity of v·1000 where that
// product fits.
func TestUnitWholeRoundTripProperty(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 2000
	params.Rng.Seed(1)
	props := gopter.NewProperties(params)
	props.Property("whole: Parse(Format(x)) == x over all int64", prop.ForAll(func(x int64) bool {
		v, err := UnitWhole.Parse(UnitWhole.Format(x))
		return err == nil && v == x
	}, gen.Int64()))
	props.Property("whole: Parse(Format(x)) == x on binary multiples", prop.ForAll(func(n int64, k uint8) bool {
		unit := int64(1) << (10 * (uint(k) % 7))
		x := n % (math.MaxInt64 / unit) * unit
		v, err := UnitWhole.Parse(UnitWhole.Format(x))
		return err == nil && v == x
	}, gen.Int64(), gen.UInt8()))
	props.Property("whole Format(x) == FormatQuantity(1000x)", prop.ForAll(func(x int64) bool {
		return UnitWhole.Format(x) == FormatQuantity(x*1000)
	}, gen.Int64Range(math.MinInt64/1000, math.MaxInt64/1000)))
	props.TestingRun(t)
}

func TestQuantityRoundTripProperty(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 2000
	params.Rng.Seed(1)
	props := gopter.NewProperties(params)
	roundTrip := func(x int64) bool {
		v, err := ParseQuantity(FormatQuantity(x))
		return err == nil && v == x
	}
	props.Property("Parse(Format(x)) == x over all int64", prop.ForAll(roundTrip, gen.Int64()))
	props.Property("Parse(Format(x)) == x near milli boundaries", prop.ForAll(
		func(n, d int64) bool { return roundTrip(n*1000 + d) },
		gen.Int64Range(math.MinInt64/1000+1, math.MaxInt64/1000-1), gen.Int64Range(-2, 2)))
	props.Property("Parse(Format(x)) == x on binary multiples", prop.ForAll(
		func(n int64, k uint8) bool {
			unit := int64(1000) << (10 * (uint(k) % 5))
			return roundTrip(n % (math.MaxInt64 / unit) * unit)
		},
		gen.Int64(), gen.UInt8()))
	props.TestingRun(t)
}

func TestFormatQuantityIsCanonical(t *testing.T) {
	// Different spellings of one value format the same way.
	for _, group := range [][]string{
		{"1", "1000m", "1e0", "0.001k", "1000000u", "1.000"},
		{"1Ki", "1024", "1.024k", "1024000m"},
		{"1Gi", "1024Mi", "1048576Ki", "1073741824"},
		{"1500m", "1.5", "0.0015k", "15e-1"},
	} {
		want := ""
		for _, s := range group {
			v, err := ParseQuantity(s)
			require.NoError(t, err, s)
			if want == "" {
				want = FormatQuantity(v)
			}
			assert.Equal(t, want, FormatQuantity(v), s)
		}
	}
}

func FuzzParseQuantity(f *testing.F) {
	for _, s := range []string{
		"500m", "4Gi", "1.5", "2e3", "1M", "1Mi", "1n", "-1", "", "1x", "1.2.3", "e3",
		"1Gi1", ".5", "1.", "+1e-3", "9223372036854775807m", "-9223372036854775808m",
		"1e-99999999999999999999", "0.000000000000000000000000001Ei", "8Pi", "1E",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseQuantity(s)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "quantity" || fe.Value != s {
				t.Fatalf("%q: error %v is not a quantity FieldError", s, err)
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("%q: unexpected error class %v", s, err)
			}
			return
		}
		out := FormatQuantity(v)
		back, err := ParseQuantity(out)
		if err != nil || back != v {
			t.Fatalf("%q → %d → %q → %d, %v", s, v, out, back, err)
		}
		if again := FormatQuantity(back); again != out {
			t.Fatalf("format not canonical: %q then %q", out, again)
		}
		if q, ok := scanQuantity(s); ok && q.exp10 > -5000 && q.exp10 < 5000 {
			if want := bigMilli(q); !want.IsInt64() || want.Int64() != v {
				t.Fatalf("%q: got %d, oracle says %s", s, v, want)
			}
			w, err := UnitWhole.Parse(s)
			if err != nil || w != bigScaled(q, 0).Int64() {
				t.Fatalf("%q in whole units: got %d, %v; oracle says %s", s, w, err, bigScaled(q, 0))
			}
		}
	})
}

func BenchmarkParseQuantity(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = ParseQuantity("1.5Gi")
	}
}
