package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The engine speaks to both front doors: no message of its names a flag
// of the command line (--drop-state, --from, --fresh). It returns typed
// errors (RestoreRefusedError, LeftBehindError, RerunError) whose fields
// each front door words in its own terms.
func TestNoMessageNamesAFlag(t *testing.T) {
	flag := regexp.MustCompile(`(^|[\s(])--[a-z]`)
	fset := token.NewFileSet()
	names, _ := os.ReadDir(".")
	n := 0
	for _, e := range names {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		n++
		ast.Inspect(f, func(node ast.Node) bool {
			if lit, ok := node.(*ast.BasicLit); ok && lit.Kind == token.STRING && flag.MatchString(lit.Value) {
				t.Errorf("%s: a message names a flag: %s", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
	}
	if n < 10 {
		t.Fatalf("read %d files of the engine", n)
	}
}
