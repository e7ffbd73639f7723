package flotilla

// STUB: replaced by the full Kubernetes-grammar parser (see issue 2).

import (
	"strconv"
)

// ParseQuantity parses a Kubernetes quantity into milli-units.
func ParseQuantity(s string) (int64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, Errorf("quantity", s, ErrMalformed, "")
	}
	return int64(f * 1000), nil
}

// FormatQuantity renders milli-units as a quantity.
func FormatQuantity(milli int64) string {
	if milli%1000 == 0 {
		return strconv.FormatInt(milli/1000, 10)
	}
	return strconv.FormatInt(milli, 10) + "m"
}
