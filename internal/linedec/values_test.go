package linedec

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/source"
)

// A number's canonical text is its exact value: integers in plain digits
// whatever their length (up to plainDigits), other numbers as encoding/json
// writes a float that holds them exactly. The numbers a float64 writes
// exactly keep the text they had when they went through one (1.5, 0.1,
// 2.50, -3, 1e-7, 12.345); the others keep their digits.
func TestCanonicalNumbers(t *testing.T) {
	zeros := func(n int) string { return strings.Repeat("0", n) }
	for _, c := range []struct{ in, want string }{
		// As a float64 writes them.
		{"1.5", "1.5"},
		{"0.1", "0.1"},
		{"2.50", "2.5"},
		{"-3", "-3"},
		{"1e-7", "1e-7"},
		{"12.345", "12.345"},
		{"0.000001", "0.000001"},
		{"1.25e-7", "1.25e-7"},
		{"-2.5E-10", "-2.5e-10"},
		{"100000000000000000000", "100000000000000000000"},
		// 19 digits, in int64 and beyond it.
		{"9223372036854775807", "9223372036854775807"},
		{"-9223372036854775808", "-9223372036854775808"},
		{"9999999999999999999", "9999999999999999999"},
		// 20 and 21 digits.
		{"18446744073709551615", "18446744073709551615"},
		{"18446744073709551614", "18446744073709551614"},
		{"-18446744073709551615", "-18446744073709551615"},
		{"100000000000000000001", "100000000000000000001"},
		// 40 digits.
		{"1234567890123456789012345678901234567890", "1234567890123456789012345678901234567890"},
		{"-1000000000000000000000000000000000000001", "-1000000000000000000000000000000000000001"},
		// Zero has no sign.
		{"0", "0"},
		{"-0", "0"},
		{"-0.0", "0"},
		{"0e7", "0"},
		{"-0.000E-3", "0"},
		{"0.0e99999999999999999999", "0"},
		// One value, however written.
		{"1e3", "1000"},
		{"1E3", "1000"},
		{"1e+3", "1000"},
		{"1.0e3", "1000"},
		{"1000.0", "1000"},
		{"10e2", "1000"},
		{"10000e-1", "1000"},
		{"0.01e5", "1000"},
		{"1.8446744073709551615e19", "18446744073709551615"},
		// Integers of any size in plain digits, up to plainDigits.
		{"1e21", "1" + zeros(21)},
		{"1.5e300", "15" + zeros(299)},
		{"1e400", "1" + zeros(400)},
		{"-1e400", "-1" + zeros(400)},
		{"1e999", "1" + zeros(999)},
		{"1e1000", "1e+1000"},
		{"-12e1000", "-1.2e+1001"},
		{"1" + zeros(1000), "1e+1000"},
		{"1e99999999999999999999", "1e+99999999999999999999"},
		// Fractions: plain from 1e-6 to 1e21, else an exponent.
		{"0.10000000000000000001", "0.10000000000000000001"},
		{"123456789012345678901.5", "123456789012345678901.5"},
		{"1234567890123456789012.5", "1.2345678901234567890125e+21"},
		{"0.00000123456789012345678901", "0.00000123456789012345678901"},
		{"0.000000123456789012345678901", "1.23456789012345678901e-7"},
		{"1e-400", "1e-400"},
		{"12.5e-99999999999999999999", "1.25e-99999999999999999998"},
	} {
		v, err := fastjson.Parse(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if !Scalar(v, nil) {
			t.Errorf("%.60s is not a scalar", c.in)
		}
		if got := string(AppendCanonicalJSON([]byte("x"), v)); got != "x"+c.want {
			t.Errorf("%.60s: canonical %.60s (%d bytes), want %.60s (%d)", c.in, got[1:], len(got)-1, c.want, len(c.want))
		}
		if got := string(AppendIdentity(nil, val(v))); got != "n"+c.want {
			t.Errorf("%.60s: identity %.60s (%d bytes), want n%.60s (%d)", c.in, got, len(got), c.want, len(c.want)+1)
		}
	}
}

// Two values are one key, id or partition exactly when they are the same
// value of the same JSON type: 1e3 and 1000 are one number, the 20-digit
// integers that one float64 rounds both to are two, and the string "1" is
// not the number 1.
func TestIdentity(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"1e3", "1000", true},
		{"1000.0", "1.0e3", true},
		{"-0", "0", true},
		{"0.5", "5e-1", true},
		{"18446744073709551615", "18446744073709551614", false},
		{"100000000000000000001", "100000000000000000000", false},
		{"18446744073709551616", "18446744073709551617", false},
		{"1234567890123456789012345678901234567890", "1234567890123456789012345678901234567891", false},
		{"-18446744073709551615", "18446744073709551615", false},
		{"1e400", "1e401", false},
		{"1e-400", "0", false},
		{"0.1", "0.10000000000000000001", false},
		{`"1"`, "1", false},
		{`"c1"`, `"\u0063\u0031"`, true},
		{"true", `"true"`, false},
	} {
		a, b := fastjson.MustParse(c.a), fastjson.MustParse(c.b)
		if same := string(AppendIdentity(nil, val(a))) == string(AppendIdentity(nil, val(b))); same != c.same {
			t.Errorf("%s and %s: one identity %v, want %v", c.a, c.b, same, c.same)
		}
	}
}

// Every JSON number is a scalar, whatever its size; what fastjson takes and
// JSON has not, null, objects and arrays are not.
func TestScalar(t *testing.T) {
	for in, want := range map[string]bool{
		`"s"`: true, `true`: true, `false`: true, `1`: true, `-1.5e-3`: true,
		`1e400`: true, `-1e400`: true, `1e-400`: true, `1e99999999999999999999`: true,
		`NaN`: false, `-Inf`: false, `inf`: false, `null`: false, `[1]`: false, `{"a":1}`: false,
	} {
		v, err := fastjson.Parse(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := Scalar(v, nil); got != want {
			t.Errorf("%s: scalar %v, want %v", in, got, want)
		}
	}
}

// Whether a value is a key, an id or a partition, its identity and its
// canonical text are found in the caller's buffers, without allocating,
// whatever the number's size.
func TestCanonicalAllocations(t *testing.T) {
	buf, scratch := make([]byte, 0, 2048), make([]byte, 0, 64)
	for _, in := range []string{`"card_7"`, `12345`, `-9223372036854775808`, `1.5`, `18446744073709551615`, `1e999`, `-12.5e-300`} {
		v := fastjson.MustParse(in)
		var slab []byte
		if n := testing.AllocsPerRun(100, func() {
			Scalar(v, &scratch)
			slab = slab[:0]
			sv := source.ValueOf(v, &slab)
			svp := &sv
			buf = AppendIdentity(buf[:0], svp)
			buf = AppendCanonical(buf[:0], svp)
		}); n != 0 {
			t.Errorf("%s: %v allocations", in, n)
		}
	}
}

// The canonical text of a number has its value, exactly, and two texts have
// one canonical text exactly when their values are equal; a text encoding/json
// writes for a float64 below 1e21 is canonical already, so a number that a
// float64 held exactly is written as before.
func TestCanonicalIsTheValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() string {
		var s []byte
		if rng.IntN(2) == 0 {
			s = append(s, '-')
		}
		if rng.IntN(3) == 0 {
			s = append(s, '0')
		} else {
			s = strconv.AppendUint(s, rng.Uint64N(1e6)+1, 10)
			for range rng.IntN(30) {
				s = append(s, byte('0'+rng.IntN(10)))
			}
		}
		if rng.IntN(2) == 0 {
			s = append(s, '.')
			for range rng.IntN(30) + 1 {
				s = append(s, byte('0'+rng.IntN(10)))
			}
		}
		if rng.IntN(2) == 0 {
			s = append(s, "eE"[rng.IntN(2)])
			s = append(s, []string{"", "+", "-"}[rng.IntN(3)]...)
			s = strconv.AppendInt(s, int64(rng.IntN(60)), 10)
		}
		return string(s)
	}
	byValue := map[string]string{} // value (big.Rat) -> canonical text
	for range 20000 {
		in := random()
		v, err := fastjson.Parse(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got := string(AppendCanonicalJSON(nil, v))
		want, _ := new(big.Rat).SetString(in)
		have, ok := new(big.Rat).SetString(got)
		if !ok || have.Cmp(want) != 0 {
			t.Fatalf("%s: canonical %s, another value", in, got)
		}
		if c, seen := byValue[want.String()]; seen && c != got {
			t.Fatalf("%s: canonical %s, and %s for the same value", in, got, c)
		}
		byValue[want.String()] = got
	}
	for range 20000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= 1e21 || f == 0 {
			continue
		}
		in := string(text.AppendJSONFloat(nil, f))
		if got := string(AppendCanonicalJSON(nil, fastjson.MustParse(in))); got != in {
			t.Fatalf("%s, as a float64 writes it: canonical %s", in, got)
		}
	}
}

// val is the JSON value v as the rules read it.
func val(v *fastjson.Value) *source.Value {
	var slab []byte
	x := source.ValueOf(v, &slab)
	return &x
}

// An integer a format hands over (Value.IsInt) is read as its digits are:
// the same scalar, identity, canonical text, float, int and time.
func TestIntIsItsText(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		n := int64(rng.Uint64())
		switch i % 4 {
		case 1:
			n >>= rng.IntN(64)
		case 2:
			n = int64(rng.IntN(2000)) - 1000
		case 3:
			n = []int64{math.MinInt64, math.MaxInt64, 0, -1, 1 << 53, 1<<53 + 1}[rng.IntN(6)]
		}
		digits := strconv.AppendInt(nil, n, 10)
		typed := &source.Value{Type: source.Number, Text: digits, IsInt: true, Int: n}
		text := val(fastjson.MustParse(string(digits)))
		if IsScalar(typed) != IsScalar(text) ||
			string(AppendIdentity(nil, typed)) != string(AppendIdentity(nil, text)) ||
			string(AppendCanonical(nil, typed)) != string(AppendCanonical(nil, text)) {
			t.Fatalf("%d: typed %q %q, text %q %q", n, AppendIdentity(nil, typed), AppendCanonical(nil, typed), AppendIdentity(nil, text), AppendCanonical(nil, text))
		}
		if a, b := typed.Float(), text.Float(); a != b {
			t.Fatalf("%d: float %v, text %v", n, a, b)
		}
		if a, oka := typed.Int64(); true {
			if b, okb := text.Int64(); a != b || oka != okb {
				t.Fatalf("%d: int %d %v, text %d %v", n, a, oka, b, okb)
			}
		}
		if a, oka := source.TimeOf(typed); true {
			if b, okb := source.TimeOf(text); a != b || oka != okb {
				t.Fatalf("%d: time %d %v, text %d %v", n, a, oka, b, okb)
			}
		}
	}
}
