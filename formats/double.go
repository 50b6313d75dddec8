package formats

import (
	"math"
	"strconv"
)

// appendDouble appends f as strconv.AppendFloat(b, f, 'g', -1, 64) does,
// the text every format writes a double as, in a fraction of its time for
// the doubles events mostly hold: amounts of at most two decimals below a
// million. Such a double is the nearest to k/100 for an integer k of at
// most 15 digits, and no two decimals of at most 15 significant digits
// are nearest to one double, so k/100 (its trailing zeros dropped) is the
// shortest text that reads back as f; below 10^6 and from 0.01, 'g' writes
// it without an exponent.
func appendDouble(b []byte, f float64) []byte {
	if a := math.Abs(f); a >= 0.01 && a < 1e6 {
		x := f * 100
		if k := int64(x); float64(k) == x && float64(k)/100 == f {
			if k < 0 {
				b, k = append(b, '-'), -k
			}
			b = strconv.AppendInt(b, k/100, 10)
			switch c := k % 100; {
			case c == 0:
			case c%10 == 0:
				b = append(b, '.', byte('0'+c/10))
			default:
				b = append(b, '.', byte('0'+c/10), byte('0'+c%10))
			}
			return b
		}
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
