package humanize

import (
	"math"
	"testing"
)

func TestBytes(t *testing.T) {
	for in, want := range map[float64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 64 << 20: "64 MiB",
		1.5 * (1 << 30): "1.5 GiB", 3 << 40: "3 TiB", -2048: "-2 KiB", math.NaN(): "n/a"} {
		if got := Bytes(in); got != want {
			t.Errorf("Bytes(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[float64]string{0.25: "250ms", 5: "5s", 252.4: "4m12s", 3 * 3600: "3h00m", 90000: "1d1h", -3: "0ms", math.Inf(1): "n/a"} {
		if got := Seconds(in); got != want {
			t.Errorf("Seconds(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestSecondsTenths(t *testing.T) {
	for in, want := range map[float64]string{0.25: "250ms", 1.75: "1.7s", 2: "2s", 9.99: "9.9s", 12.5: "12s"} {
		if got := SecondsTenths(in); got != want {
			t.Errorf("SecondsTenths(%v) = %q, want %q", in, got, want)
		}
	}
}
