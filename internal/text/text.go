// Package text holds small formatting helpers shared by weir's writers.
package text

// AppendPadded appends v (not negative) in decimal, zero-padded to at least
// width digits, without allocating.
func AppendPadded(b []byte, v int64, width int) []byte {
	var tmp [20]byte
	i := len(tmp)
	for v >= 10 || width > 1 {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		width--
	}
	i--
	tmp[i] = byte('0' + v)
	return append(b, tmp[i:]...)
}
