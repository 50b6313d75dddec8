// Package text holds small formatting helpers shared by weir's writers:
// zero-padded decimals, JSON strings and numbers as encoding/json writes
// them, error texts without a repeated path.
package text

import (
	"fmt"
	"os"
)

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

// Size is a size in bytes for a person: 812 B, 14.2 KiB, 3.0 MiB, 1.5 GiB.
func Size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
