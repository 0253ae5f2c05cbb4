package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"strings"
	"testing"
)

// TestExportedNamesHaveDocComments fails for an exported name of a library
// package (not main, not a test file) without a doc comment: a function, a
// method of an exported type, a type, or a constant or variable outside a
// commented group and without a line comment.
func TestExportedNamesHaveDocComments(t *testing.T) {
	root := moduleRoot(t)
	var files []string
	walk(t, root, "", &files)
	walk(t, root, "vfs", &files) // exempt from the file-access rule only
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		missing, isMain := undocumented(t, f, readFile(t, path.Join(root, f)))
		if isMain {
			continue
		}
		for _, m := range missing {
			t.Errorf("%s: exported %s has no doc comment", f, m)
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("only %d files checked: the walk is broken", checked)
	}
}

// undocumented returns the exported names src declares without a doc
// comment, and whether src is a main package (which has no API).
func undocumented(t *testing.T, name string, src []byte) (missing []string, isMain bool) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if f.Name.Name == "main" {
		return nil, true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && d.Doc == nil && (d.Recv == nil || exportedRecv(d.Recv)) {
				missing = append(missing, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
						missing = append(missing, s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && d.Doc == nil && s.Comment == nil {
							missing = append(missing, n.Name)
						}
					}
				}
			}
		}
	}
	return missing, false
}

// TestUndocumentedFindsMissing shows the check above can fail: each kind
// of undocumented exported name is found; documented, grouped, unexported
// names and methods of unexported types are not.
func TestUndocumentedFindsMissing(t *testing.T) {
	src := `package p

func F() {}

// G is documented.
func G() {}

func g() {}

type T struct{}

func (T) M() {}

type u struct{}

func (u) M() {}

var V = 1

// Group is documented as a whole.
const (
	A = 1
	B = 2
)

const C = 3 // C has a line comment.
`
	missing, _ := undocumented(t, "p.go", []byte(src))
	if got, want := strings.Join(missing, " "), "F T M V"; got != want {
		t.Fatalf("undocumented: %q, want %q", got, want)
	}
}
