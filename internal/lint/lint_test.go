// Package lint holds repository-wide checks that run as ordinary tests.
//
// TestNoDirectFileAccess enforces the filesystem seam: every file the module
// touches is touched through vfs, so MemFS and InjectFS see all of
// it. It parses every .go file of the module (tests included, vfs
// itself and nested modules such as bench/peers excluded) and fails on any
// reference to a function that reaches the real filesystem directly: os
// file functions (os.Open, os.Create, os.ReadFile, os.Rename, os.Stat, ...),
// their io/ioutil, syscall and golang.org/x/sys/unix equivalents (open,
// unlink, rename, ftruncate, fsync, fallocate, flock, mmap, ...), mmap-go,
// and the path/filepath walkers. It works on the syntax tree, so comments and
// strings never trip it, and renamed imports do not hide a call.
//
// os.Stdin, os.Stdout, os.Stderr, os.Exit, os.Args, os.Getenv and the like
// stay allowed everywhere; t.TempDir is the way for tests to get a directory.
//
// A rare justified use is allowed by a comment on the same line starting
// with "//vfs:allow" followed by the reason, e.g.
//
//	fd, err := unix.Open(dev, unix.O_RDONLY, 0) //vfs:allow probing a block device for its sector size
//
// TestPublicAPI pins the public surface: every exported name of the public
// packages is listed in testdata/api.txt, with a count per package in its
// header. A change to the surface changes that file in the same commit:
//
//	go test ./internal/lint -run TestPublicAPI -update
package lint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// fileFuncs maps an import path to the functions of it that touch the
// filesystem without going through vfs.
var fileFuncs = map[string][]string{
	"os": {"Chmod", "Chown", "Chtimes", "CopyFS", "Create", "CreateTemp", "DirFS",
		"Lchown", "Link", "Lstat", "Mkdir", "MkdirAll", "MkdirTemp", "NewFile", "Open",
		"OpenFile", "OpenInRoot", "OpenRoot", "ReadDir", "ReadFile", "Readlink", "Remove",
		"RemoveAll", "Rename", "Stat", "Symlink", "Truncate", "WriteFile"},
	"io/ioutil":                 {"ReadDir", "ReadFile", "TempDir", "TempFile", "WriteFile"},
	"path/filepath":             {"EvalSymlinks", "Glob", "Walk", "WalkDir"},
	"syscall":                   sysFuncs,
	"golang.org/x/sys/unix":     sysFuncs,
	"github.com/edsrzf/mmap-go": {"Map", "MapRegion"},
}

var sysFuncs = []string{"Creat", "Fallocate", "Fdatasync", "Flock", "Fsync", "Ftruncate",
	"Link", "Linkat", "Lstat", "Mkdir", "Mkdirat", "Mmap", "Msync", "Munmap", "Open",
	"Openat", "Openat2", "Rename", "Renameat", "Renameat2", "Rmdir", "Stat", "Symlink",
	"Symlinkat", "Sync", "SyncFileRange", "Truncate", "Unlink", "Unlinkat"}

// allowMarker on a line exempts that line.
const allowMarker = "//vfs:allow"

// exempt lists module directories (slash paths from the module root) whose
// files are not checked.
var exempt = []string{"vfs"}

func TestNoDirectFileAccess(t *testing.T) {
	root := moduleRoot(t)
	var files []string
	walk(t, root, "", &files)
	if !slices.Contains(files, "internal/lint/lint_test.go") {
		t.Fatalf("walk of %s missed this file; found %d files", root, len(files))
	}
	for _, rel := range files {
		src := readFile(t, path.Join(root, rel))
		findings, err := check(rel, src)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		for _, f := range findings {
			t.Errorf("%s: %s", f, "use vfs (or add //vfs:allow with a reason)")
		}
	}
}

// moduleRoot finds the directory holding go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	dir := "."
	for range 10 {
		if _, err := vfs.Default.Stat(path.Join(dir, "go.mod")); err == nil {
			return dir
		}
		dir = path.Join(dir, "..")
	}
	t.Fatal("go.mod not found above the test directory")
	return ""
}

// walk appends the .go files below root/rel, as slash paths relative to
// root, skipping hidden, testdata, vendor, exempt and nested-module
// directories.
func walk(t *testing.T, root, rel string, files *[]string) {
	dir := path.Join(root, rel)
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rel != "" && slices.Contains(names, "go.mod") {
		return // a nested module: its own rules
	}
	for _, name := range names {
		r := path.Join(rel, name)
		fi, err := vfs.Default.Stat(path.Join(root, r))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case fi.IsDir():
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "vendor" || slices.Contains(exempt, r) {
				continue
			}
			walk(t, root, r, files)
		case strings.HasSuffix(name, ".go"):
			*files = append(*files, r)
		}
	}
}

// readFile returns the whole of a file on the real filesystem.
func readFile(t *testing.T, name string) []byte {
	t.Helper()
	return vfstest.ReadFile(t, vfs.Default, name)
}

// check returns "file:line: pkg.Func" for every forbidden reference in src.
func check(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	// Local import name → forbidden functions of that package.
	banned := map[string][]string{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		funcs, ok := fileFuncs[p]
		if !ok {
			continue
		}
		local := path.Base(p)
		switch {
		case p == "github.com/edsrzf/mmap-go":
			local = "mmap"
		case imp.Name != nil:
			local = imp.Name.Name
		}
		if local == "_" || local == "." {
			// A dot import would hide calls from this check; forbid it.
			if local == "." {
				return []string{fmt.Sprintf("%s: dot import of %q", fset.Position(imp.Pos()), p)}, nil
			}
			continue
		}
		banned[local] = funcs
	}
	if len(banned) == 0 {
		return nil, nil
	}
	allowed := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, allowMarker) {
				allowed[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	shadowed := declaredNames(f)
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || shadowed[id.Name] {
			return true
		}
		if funcs, ok := banned[id.Name]; ok && slices.Contains(funcs, sel.Sel.Name) {
			pos := fset.Position(sel.Pos())
			if !allowed[pos.Line] {
				out = append(out, fmt.Sprintf("%s:%d: %s.%s", name, pos.Line, id.Name, sel.Sel.Name))
			}
		}
		return true
	})
	return out, nil
}

// declaredNames returns names the file declares for anything other than an
// import (variables, parameters, fields used as receivers). Without type
// information the check cannot tell `os.Open` from a variable called os
// with an Open method; a file that declares such a name is trusted for it,
// which only loses precision in files that shadow a package name.
func declaredNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	add := func(id *ast.Ident) {
		if id != nil {
			names[id.Name] = true
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for _, id := range n.Names {
				add(id)
			}
		case *ast.Field:
			for _, id := range n.Names {
				add(id)
			}
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, e := range n.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				if id, ok := n.Key.(*ast.Ident); ok {
					add(id)
				}
				if id, ok := n.Value.(*ast.Ident); ok {
					add(id)
				}
			}
		}
		return true
	})
	return names
}

func TestCheckerFindsAndSpares(t *testing.T) {
	src := `package p

import (
	"os"
	sys "golang.org/x/sys/unix"
	"github.com/edsrzf/mmap-go"
	"path/filepath"
)

// os.Open in a comment is fine, and so is "os.Remove" in a string.
func f() {
	_, _ = os.Open("x")
	_ = os.Stdout
	os.Exit(1)
	_ = sys.Fsync(3)
	_, _ = mmap.MapRegion(nil, 1, 0, 0, 0)
	_ = filepath.Join("a", "b")
	_ = os.Remove("y") //vfs:allow removing a socket file the kernel made
	g := os.ReadFile
	_ = g
}
`
	got, err := check("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p.go:12: os.Open", "p.go:15: sys.Fsync", "p.go:16: mmap.MapRegion", "p.go:19: os.ReadFile"}
	if !slices.Equal(got, want) {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	shadow := `package p

import "os"

type opener struct{}

func (opener) Open(string) {}

func f(os opener) { os.Open("x") }
`
	if got, err := check("q.go", []byte(shadow)); err != nil || len(got) != 0 {
		t.Fatalf("shadowed name flagged: %v, %v", got, err)
	}

	dot := "package p\n\nimport . \"os\"\n\nfunc f() { Open(\"x\") }\n"
	if got, err := check("r.go", []byte(dot)); err != nil || len(got) != 1 {
		t.Fatalf("dot import not flagged: %v, %v", got, err)
	}
}
