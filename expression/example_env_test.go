package expression_test

import (
	"fmt"
	"math"

	"github.com/weirstream/weir/expression"
)

// A condition over a pane: its names declared once, its values set for
// each pane.
func ExampleEnv() {
	var env expression.Env
	orders := env.Declare("orders", expression.Number)
	key := env.Declare("key", expression.String)
	revision := env.Declare("revision", expression.Int)
	having, err := env.CompileCondition(`orders >= 5 && key != "c9" && revision % 2 == 1`)
	if err != nil {
		panic(err)
	}
	vars := env.Vars()
	for _, pane := range []struct {
		orders   float64
		key      string
		revision int64
	}{{7, "c1", 1}, {7, "c9", 1}, {math.NaN(), "c1", 3}} {
		vars.SetNumber(orders, pane.orders)
		vars.SetString(key, pane.key)
		vars.SetInt(revision, pane.revision)
		keep, err := having.Holds(vars)
		fmt.Println(keep, err)
	}
	_, err = env.CompileCondition(`order > 1`)
	fmt.Println(err)
	// Output:
	// true <nil>
	// false <nil>
	// false <nil>
	// unknown name order (1:1)
	//  | order > 1
	//  | ^
}
