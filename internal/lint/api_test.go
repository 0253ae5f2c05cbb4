package lint

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

var update = flag.Bool("update", false, "rewrite testdata/api.txt from the source")

// apiGolden is the checked-in list of the public API, relative to this
// package's directory.
const apiGolden = "testdata/api.txt"

// apiRegenerate is the command that rewrites apiGolden, quoted in failures
// and in the file's header.
const apiRegenerate = "go test ./internal/lint -run TestPublicAPI -update"

// TestPublicAPI pins the public surface: every exported name of every
// public package (not internal/, cmd/, examples/ or a main package) is
// listed in testdata/api.txt, and a name that appears or disappears fails
// the test until the list is regenerated in the same commit. The surface
// then cannot grow by accident: a new exported name is a line in review.
//
// Names only, not signatures: a changed parameter list is the compiler's
// and the callers' business, a new name is the API's. Every file of a
// package counts, whatever its build constraints, so the list is the same
// on every platform.
func TestPublicAPI(t *testing.T) {
	root := moduleRoot(t)
	got := renderAPI(publicAPI(t, root))
	for _, line := range apiCounts(got) {
		t.Log(line)
	}
	golden := path.Join(root, "internal/lint", apiGolden)
	if *update {
		vfstest.WriteFile(t, vfs.Default, golden, got)
		t.Logf("wrote %s", golden)
		return
	}
	want := readFile(t, golden)
	if bytes.Equal(got, want) {
		return
	}
	added, removed := diffLines(apiEntries(want), apiEntries(got))
	var b strings.Builder
	fmt.Fprintf(&b, "the public API differs from %s (%d added, %d removed):\n", apiGolden, len(added), len(removed))
	for _, l := range removed {
		fmt.Fprintf(&b, "  - %s\n", l)
	}
	for _, l := range added {
		fmt.Fprintf(&b, "  + %s\n", l)
	}
	if len(added)+len(removed) == 0 {
		b.WriteString("  (only the header differs)\n")
	}
	fmt.Fprintf(&b, "if the change is meant, regenerate the list in the same commit:\n  %s", apiRegenerate)
	t.Fatal(b.String())
}

// apiName is one exported name: its package (the import path without the
// module's "github.com/seglog/" prefix), the name as a caller writes it
// after the package (Log, Log.Append, Options.FS) and what it is.
type apiName struct {
	pkg, name, kind string
}

func (n apiName) String() string { return n.pkg + "." + n.name + " " + n.kind }

// apiKinds lists the kinds an entry can have, for the golden's header.
const apiKinds = "const, var, func, type, method (of an exported type or interface), field (of an exported struct), embed T (a field or interface element embedding type T)"

// publicAPI returns the exported names of the module's public packages,
// sorted, without repeats.
func publicAPI(t *testing.T, root string) []apiName {
	var files []string
	walk(t, root, "", &files)
	walk(t, root, "vfs", &files) // exempt from the file-access rule only
	seen := map[apiName]bool{}
	var out []apiName
	read := 0
	for _, f := range files {
		dir := path.Dir(f)
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "internal/") ||
			strings.Contains(f, "/internal/") || strings.HasPrefix(f, "cmd/") ||
			strings.HasPrefix(f, "examples/") {
			continue
		}
		pkg := "seglog"
		if dir != "." {
			pkg = "seglog/" + dir
		}
		names, isMain := exportedNames(t, f, readFile(t, path.Join(root, f)))
		if isMain {
			continue
		}
		for _, n := range names {
			n.pkg = pkg
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
		read++
	}
	if read < 50 {
		t.Fatalf("only %d files read: the walk is broken", read)
	}
	slices.SortFunc(out, func(a, b apiName) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// exportedNames returns the exported names src declares (pkg left empty),
// and whether src is a main package (which has no API).
func exportedNames(t *testing.T, name string, src []byte) (out []apiName, isMain bool) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if f.Name.Name == "main" {
		return nil, true
	}
	add := func(name, kind string) { out = append(out, apiName{name: name, kind: kind}) }
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				add(d.Name.Name, "func")
			} else if recv := recvName(d.Recv); ast.IsExported(recv) {
				add(recv+"."+d.Name.Name, "method")
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						add(s.Name.Name, "type")
						typeMembers(s.Name.Name, s.Type, add)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							add(n.Name, d.Tok.String())
						}
					}
				}
			}
		}
	}
	return out, false
}

// typeMembers adds the exported fields of a struct type and the methods of
// an interface type; embedded ones are named by their type, as a caller
// selects them.
func typeMembers(typeName string, typ ast.Expr, add func(name, kind string)) {
	var list *ast.FieldList
	switch x := typ.(type) {
	case *ast.StructType:
		list = x.Fields
	case *ast.InterfaceType:
		list = x.Methods
	default:
		return
	}
	_, isIface := typ.(*ast.InterfaceType)
	for _, fld := range list.List {
		if len(fld.Names) == 0 {
			if n := embeddedName(fld.Type); ast.IsExported(n) || isIface {
				add(typeName+"."+n, "embed "+types(fld.Type))
			}
			continue
		}
		for _, n := range fld.Names {
			switch {
			case !n.IsExported():
			case isIface:
				add(typeName+"."+n.Name, "method")
			default:
				add(typeName+"."+n.Name, "field")
			}
		}
	}
}

// embeddedName is the field name an embedded type gives its struct.
func embeddedName(typ ast.Expr) string {
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
		case *ast.IndexExpr:
			typ = x.X
		case *ast.IndexListExpr:
			typ = x.X
		case *ast.SelectorExpr:
			return x.Sel.Name
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// types prints an embedded type's expression (io.Reader, *Base, ~int | ~uint).
func types(typ ast.Expr) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, token.NewFileSet(), typ); err != nil {
		return fmt.Sprintf("%T", typ)
	}
	return b.String()
}

// recvName is the name of a method's receiver type, without pointer or
// type parameters.
func recvName(recv *ast.FieldList) string {
	if len(recv.List) == 0 {
		return ""
	}
	return embeddedName(recv.List[0].Type)
}

// renderAPI prints the golden file: a header with the regeneration command
// and the count of names per package, then one name a line.
func renderAPI(names []apiName) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The public API of seglog: one exported name a line, sorted.\n")
	fmt.Fprintf(&b, "# Checked by TestPublicAPI (internal/lint/api_test.go); after a deliberate change:\n")
	fmt.Fprintf(&b, "#   %s\n", apiRegenerate)
	fmt.Fprintf(&b, "# Kinds: %s.\n", apiKinds)
	fmt.Fprintf(&b, "#\n# package: top-level names (consts, vars, funcs, types) / all entries\n")
	for _, line := range apiCountLines(names) {
		fmt.Fprintf(&b, "#   %s\n", line)
	}
	for _, n := range names {
		fmt.Fprintf(&b, "%s\n", n)
	}
	return b.Bytes()
}

// apiCountLines returns "pkg: top / all" for each package, and a total.
func apiCountLines(names []apiName) []string {
	type count struct{ top, all int }
	counts := map[string]*count{}
	var pkgs []string
	total := count{}
	for _, n := range names {
		c := counts[n.pkg]
		if c == nil {
			c = &count{}
			counts[n.pkg] = c
			pkgs = append(pkgs, n.pkg)
		}
		c.all++
		total.all++
		if !strings.Contains(n.name, ".") {
			c.top++
			total.top++
		}
	}
	slices.Sort(pkgs)
	var out []string
	for _, p := range pkgs {
		out = append(out, fmt.Sprintf("%-24s %4d / %4d", p+":", counts[p].top, counts[p].all))
	}
	return append(out, fmt.Sprintf("%-24s %4d / %4d", "total:", total.top, total.all))
}

// apiCounts returns the count lines of a rendered list's header, for the
// test log.
func apiCounts(rendered []byte) []string {
	var out []string
	for _, l := range strings.Split(string(rendered), "\n") {
		if strings.HasPrefix(l, "#   seglog") || strings.HasPrefix(l, "#   total:") {
			out = append(out, strings.TrimPrefix(l, "#   "))
		}
	}
	return out
}

// apiEntries returns the name lines of a rendered list, without the header.
func apiEntries(rendered []byte) []string {
	var out []string
	for _, l := range strings.Split(string(rendered), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// diffLines returns the lines of got not in want (added) and of want not in
// got (removed), each in order.
func diffLines(want, got []string) (added, removed []string) {
	in := func(lines []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range lines {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	for _, l := range got {
		if !w[l] {
			added = append(added, l)
		}
	}
	for _, l := range want {
		if !g[l] {
			removed = append(removed, l)
		}
	}
	return added, removed
}

// TestExportedNamesListsEveryKind shows the extraction finds each kind of
// exported name and leaves out unexported ones, methods of unexported types
// and main packages.
func TestExportedNamesListsEveryKind(t *testing.T) {
	src := []byte(`package p
import "io"
const C, c = 1, 2
var V int
type T struct {
	F, f int
	io.Reader
	*Base
	hidden
}
type I interface {
	io.Closer
	M()
	m()
}
type G[K comparable] struct{ X K }
type t struct{ Y int }
func F() {}
func f() {}
func (T) M() {}
func (*G[K]) N() {}
func (t) Z() {}
`)
	names, isMain := exportedNames(t, "p.go", src)
	var got []string
	for _, n := range names {
		got = append(got, n.name+" "+n.kind)
	}
	want := []string{"C const", "V var", "T type", "T.F field", "T.Reader embed io.Reader", "T.Base embed *Base",
		"I type", "I.Closer embed io.Closer", "I.M method", "G type", "G.X field", "F func", "T.M method", "G.N method"}
	if isMain || strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if _, isMain := exportedNames(t, "m.go", []byte("package main\nfunc F() {}\n")); !isMain {
		t.Fatal("a main package was not recognized")
	}
}

// TestDiffLinesShowsBothSides checks the failure message's diff.
func TestDiffLinesShowsBothSides(t *testing.T) {
	added, removed := diffLines([]string{"a", "b", "c"}, []string{"a", "c", "d"})
	if !slices.Equal(added, []string{"d"}) || !slices.Equal(removed, []string{"b"}) {
		t.Fatalf("added %q removed %q", added, removed)
	}
}
