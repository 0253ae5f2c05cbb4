package lint

import (
	"bytes"
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestDocCodeCompilesOutsideModule builds every ```go block of README.md
// and docs/*.md as a program of a scratch module that requires seglog
// through a replace directive: what the documentation shows an embedder
// must compile for one, so it may use only exported names (nothing under
// internal/) and must keep up with the API.
//
// A block that starts with "package" is a whole file. Any other block is
// the body of a function returning error; the imports it needs are added
// from the package names it uses (see docImports). Build errors point at
// the Markdown file and line through //line directives.
func TestDocCodeCompilesOutsideModule(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the documentation's code: %v", err)
	}
	root := moduleRoot(t)
	abs, err := exec.Command(gobin, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	modDir := strings.TrimSpace(string(abs))

	docs := []string{"README.md"}
	names, err := vfs.Default.List(path.Join(root, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".md") {
			docs = append(docs, "docs/"+n)
		}
	}

	scratch := t.TempDir()
	var blocks int
	for _, doc := range docs {
		src := readFile(t, path.Join(root, doc))
		for _, b := range goBlocks(src) {
			blocks++
			dir := path.Join(scratch, fmt.Sprintf("b%03d", blocks))
			if err := vfs.Default.MkdirAll(dir); err != nil {
				t.Fatal(err)
			}
			vfstest.WriteFile(t, vfs.Default, path.Join(dir, "main.go"), docProgram(path.Join(modDir, doc), b))
		}
	}
	if blocks == 0 {
		t.Fatal("no ```go blocks found in README.md and docs/: the walk is broken")
	}
	gomod := fmt.Sprintf("module doccheck\n\ngo 1.26\n\nrequire github.com/seglog/seglog v0.0.0\n\nreplace github.com/seglog/seglog => %s\n", modDir)
	vfstest.WriteFile(t, vfs.Default, path.Join(scratch, "go.mod"), []byte(gomod))
	// The scratch module needs the checksums of seglog's own requirements;
	// they are the module's.
	vfstest.WriteFile(t, vfs.Default, path.Join(scratch, "go.sum"), readFile(t, path.Join(root, "go.sum")))

	cmd := exec.Command(gobin, "build", "-o", "/dev/null", "./...")
	cmd.Dir = scratch
	cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the documentation's Go code does not build from outside the module (%d blocks):\n%s", blocks, out)
	}
}

// codeBlock is one fenced ```go block: its text and the line of the
// Markdown file its first line is on.
type codeBlock struct {
	line int
	text string
}

func goBlocks(src []byte) []codeBlock {
	var out []codeBlock
	lines := strings.Split(string(src), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		start := i + 1
		j := start
		for j < len(lines) && strings.TrimSpace(lines[j]) != "```" {
			j++
		}
		out = append(out, codeBlock{line: start + 1, text: strings.Join(lines[start:j], "\n")})
		i = j
	}
	return out
}

// docImports are the packages a snippet may use without importing them.
var docImports = map[string]string{
	"seglog":   "github.com/seglog/seglog",
	"record":   "github.com/seglog/seglog/record",
	"vfs":      "github.com/seglog/seglog/vfs",
	"fsck":     "github.com/seglog/seglog/fsck",
	"sendfile": "github.com/seglog/seglog/sendfile",
	"segment":  "github.com/seglog/seglog/segment",
	"index":    "github.com/seglog/seglog/index",
	"context":  "context",
	"errors":   "errors",
	"fmt":      "fmt",
	"io":       "io",
	"log":      "log",
	"net":      "net",
	"os":       "os",
	"time":     "time",
}

var (
	qualified   = regexp.MustCompile(`\b([a-z]+)\.[A-Z]`)
	lineComment = regexp.MustCompile(`//.*`)
)

// docProgram turns a block into a compilable main package.
func docProgram(docPath string, b codeBlock) []byte {
	var buf bytes.Buffer
	if strings.HasPrefix(strings.TrimSpace(b.text), "package") {
		fmt.Fprintf(&buf, "//line %s:%d\n%s\n", docPath, b.line, b.text)
		return buf.Bytes()
	}
	var pkgs []string
	for _, m := range qualified.FindAllStringSubmatch(lineComment.ReplaceAllString(b.text, ""), -1) {
		if p, ok := docImports[m[1]]; ok && !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	slices.Sort(pkgs)
	buf.WriteString("package main\n\nimport (\n")
	for _, p := range pkgs {
		fmt.Fprintf(&buf, "\t%q\n", p)
	}
	buf.WriteString(")\n\nfunc main() { _ = snippet }\n\nfunc snippet() error {\n")
	fmt.Fprintf(&buf, "//line %s:%d\n%s\n", docPath, b.line, b.text)
	buf.WriteString("\treturn nil\n}\n")
	return buf.Bytes()
}
