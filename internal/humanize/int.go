package humanize

import (
	"strconv"
	"strings"
)

// Int writes n with comma thousands separators: 1234567 is "1,234,567",
// -4200 is "-4,200".
func Int[T int | int32 | int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	digits := strings.TrimPrefix(s, "-")
	var b strings.Builder
	b.Grow(len(s) + len(digits)/3)
	if len(digits) < len(s) {
		b.WriteByte('-')
	}
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(digits[i])
	}
	return b.String()
}
