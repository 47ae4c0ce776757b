package humanize

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInt(t *testing.T) {
	for in, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567",
		-1: "-1", -999: "-999", -4200: "-4,200", -100000: "-100,000",
		math.MaxInt64: "9,223,372,036,854,775,807", math.MinInt64: "-9,223,372,036,854,775,808",
	} {
		require.Equal(t, want, Int(in), "%d", in)
	}
	require.Equal(t, "2,147,483,647", Int(int32(math.MaxInt32)))
	require.Equal(t, "12,345", Int(12345))
}
