package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"strconv"
	"strings"
	"testing"
)

// TestExportedAPIAvoidsInternal fails when an exported name of a public
// package mentions a type of an internal/ package in its signature, fields
// or type: another module cannot name such a type, so an embedder could not
// call the function, fill the field or implement the interface.
func TestExportedAPIAvoidsInternal(t *testing.T) {
	root := moduleRoot(t)
	var files []string
	walk(t, root, "", &files)
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "internal/") ||
			strings.Contains(f, "/internal/") || strings.HasPrefix(f, "cmd/") {
			continue
		}
		src := readFile(t, path.Join(root, f))
		for _, p := range internalUses(t, f, src) {
			t.Errorf("%s: exported %s", f, p)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("only %d files checked: the walk is broken", checked)
	}
}

// internalUses returns "Name mentions pkg.Type" for each exported
// declaration of src that refers to an internal package.
func internalUses(t *testing.T, name string, src []byte) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	internal := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(p, "/internal/") {
			continue
		}
		local := path.Base(p)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		internal[local] = true
	}
	if len(internal) == 0 {
		return nil
	}
	var out []string
	report := func(what string, n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] {
					out = append(out, what+" mentions "+id.Name+"."+sel.Sel.Name)
				}
			}
			// Function bodies are implementation, not API.
			_, isBody := n.(*ast.BlockStmt)
			return !isBody
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
				continue
			}
			report(d.Name.Name, d.Type)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						reportType(s.Name.Name, s.Type, report)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							report(n.Name, s.Type)
							for _, v := range s.Values {
								report(n.Name, v)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// reportType checks a type's exported parts: the exported fields of a
// struct, the methods of an interface, anything else whole.
func reportType(name string, typ ast.Expr, report func(string, ast.Node)) {
	st, ok := typ.(*ast.StructType)
	if !ok {
		report(name, typ)
		return
	}
	for _, fld := range st.Fields.List {
		if len(fld.Names) == 0 { // embedded: its exported parts are promoted
			report(name, fld.Type)
			continue
		}
		for _, n := range fld.Names {
			if n.IsExported() {
				report(name+"."+n.Name, fld.Type)
			}
		}
	}
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool { return ast.IsExported(recvName(recv)) }

// TestInternalUsesFindsLeaks shows the check above can fail: every kind of
// exported mention is found, and unexported ones and bodies are not.
func TestInternalUsesFindsLeaks(t *testing.T) {
	src := []byte(`package p
import fs "example.com/m/internal/vfs"
type Options struct {
	FS fs.FS
	hidden fs.FS
}
type Getter interface{ Get() fs.File }
func Open(f fs.FS) error { var x fs.File; _ = x; return nil }
func open(f fs.FS) {}
var Default fs.FS
func (o *Options) Use() fs.File { return nil }
func (o *options) Use() fs.File { return nil }
`)
	got := internalUses(t, "p.go", src)
	want := []string{"Options.FS mentions fs.FS", "Getter mentions fs.File", "Open mentions fs.FS", "Default mentions fs.FS", "Use mentions fs.File"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
