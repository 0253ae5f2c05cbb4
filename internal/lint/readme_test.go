package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strings"
	"testing"
)

// TestReadmeExampleRuns: README.md's embedding example (its whole-program
// ```go block) is compiled by TestDocCodeCompilesOutsideModule but never
// run, since it opens a path under /var/lib and dials a consumer; the
// runnable version is Example in example_test.go, whose output is checked.
// So every method the README calls on its Log must also be called by
// Example: a step shown only in the README (as its retention once was, a
// TruncateTo that emptied the log on every run) runs nowhere.
func TestReadmeExampleRuns(t *testing.T) {
	root := moduleRoot(t)
	var readme string
	for _, b := range goBlocks(readFile(t, path.Join(root, "README.md"))) {
		if strings.HasPrefix(strings.TrimSpace(b.text), "package main") && strings.Contains(b.text, "seglog.Open(") {
			readme = b.text
			break
		}
	}
	if readme == "" {
		t.Fatal("README.md has no embedding example (a whole program calling seglog.Open)")
	}
	shown := logMethods(t, "README.md", []byte(readme), "")
	run := logMethods(t, "example_test.go", readFile(t, path.Join(root, "example_test.go")), "Example")
	if len(shown) == 0 {
		t.Fatal("found no Log method calls in README.md's example: the check is broken")
	}
	for _, m := range shown {
		if !slices.Contains(run, m) {
			t.Errorf("README.md's example calls Log.%s, which Example in example_test.go never runs: keep them in step", m)
		}
	}
}

// logMethods returns, sorted, the methods called on the variable l (the
// *seglog.Log of both examples) in src, or in its function fn if not
// empty.
func logMethods(t *testing.T, name string, src []byte, fn string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var scope ast.Node = f
	if fn != "" {
		scope = nil
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn && fd.Recv == nil {
				scope = fd
			}
		}
		if scope == nil {
			t.Fatalf("%s has no func %s", name, fn)
		}
	}
	var out []string
	ast.Inspect(scope, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "l" && !slices.Contains(out, sel.Sel.Name) {
					out = append(out, sel.Sel.Name)
				}
			}
		}
		return true
	})
	slices.Sort(out)
	return out
}
