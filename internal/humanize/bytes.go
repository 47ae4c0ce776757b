package humanize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes writes a byte count in binary units, the one unit system of the
// console (findings, tiles, panels and exports alike): 1536 is "1.5 KiB",
// 3<<40 is "3 TiB"; one decimal, none when it is zero; NaN is "n/a".
func Bytes(n float64) string {
	if math.IsNaN(n) {
		return "n/a"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	s := strconv.FormatFloat(n, 'f', 1, 64)
	if i == 0 {
		s = strconv.FormatFloat(n, 'f', 0, 64)
	}
	s = strings.TrimSuffix(s, ".0")
	if neg {
		s = "-" + s
	}
	return s + " " + units[i]
}

// Seconds writes a duration for a person: 252.4 is "4m12s", 0.25 is
// "250ms", 90000 is "1d1h"; negative is "0ms", NaN and infinities "n/a".
func Seconds(sec float64) string {
	if math.IsNaN(sec) || math.IsInf(sec, 0) {
		return "n/a"
	}
	if sec < 0 {
		sec = 0
	}
	switch {
	case sec < 1:
		return fmt.Sprintf("%dms", int(sec*1000))
	case sec < 60:
		return fmt.Sprintf("%ds", int(sec))
	case sec < 3600:
		return fmt.Sprintf("%dm%02ds", int(sec)/60, int(sec)%60)
	case sec < 86400:
		return fmt.Sprintf("%dh%02dm", int(sec)/3600, (int(sec)%3600)/60)
	}
	return fmt.Sprintf("%dd%dh", int(sec)/86400, (int(sec)%86400)/3600)
}

// SecondsTenths is Seconds with tenths of a second from 1 to 10 seconds
// (1.7 is "1.7s"), for the lengths of short waits, where "1s" for 1.7 would
// hide most of a second.
func SecondsTenths(sec float64) string {
	if sec >= 1 && sec < 10 {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", math.Floor(sec*10)/10), ".0") + "s"
	}
	return Seconds(sec)
}
