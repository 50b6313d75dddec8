// Package text holds small formatting helpers shared by weir's writers:
// zero-padded decimals, JSON strings and numbers as encoding/json writes
// them, error texts without a repeated path.
package text

import "os"

// ErrorText is an error's text without the path an *os.PathError repeats,
// for a message that names the file itself.
func ErrorText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

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
