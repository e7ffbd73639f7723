package flotilla

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAddSaturating(t *testing.T) {
	r := Resources{math.MaxInt64 - 1, math.MinInt64 + 1, 5}
	r.AddSaturating(Resources{10, -10, -7})
	assert.Equal(t, Resources{math.MaxInt64, math.MinInt64, -2}, r)
	r = Resources{1, 2, 3}
	r.AddSaturating(Resources{4, 5, 6})
	assert.Equal(t, Resources{5, 7, 9}, r, "no overflow: a plain sum")
}

func TestAddCheckedLeavesOverflowUnchanged(t *testing.T) {
	r := Resources{math.MaxInt64, 1}
	assert.False(t, r.AddChecked(Resources{1, 1}))
	assert.Equal(t, Resources{math.MaxInt64, 1}, r)
}
