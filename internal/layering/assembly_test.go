package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// constructors are the functions that build running objects (engines,
// worker processes, stores, tool sources, servers, exporters), by import
// path and name.
var constructors = map[string][]string{
	mod + "/internal/executor":       {"New"},
	mod + "/internal/durable":        {"New", "OpenFile", "OpenRedis", "OpenPostgres"},
	mod + "/internal/admission":      {"New"},
	mod + "/internal/auth":           {"New"},
	mod + "/internal/metrics":        {"New"},
	mod + "/internal/server":         {"New"},
	mod + "/internal/telemetry/otlp": {"New"},
	mod + "/internal/runtime/worker": {"NewPool", "Check"},
	mod + "/tools/mcp":               {"Start"},
	mod + "/tools/httpsource":        {"New"},
	"google.golang.org/grpc":         {"NewServer"},
}

// maxCommandFuncLines bounds a function under cmd/: a command parses its
// flags and calls the assembly; long wiring belongs in internal/service.
const maxCommandFuncLines = 100

// goPackage is what go list reports of a package.
type goPackage struct {
	path, dir string
	files     []string
	imports   []string
}

func listPackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{.Dir}}|{{join .GoFiles " "}}|{{join .Imports " "}}`, mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		pkgs = append(pkgs, goPackage{path: f[0], dir: f[1], files: strings.Fields(f[2]), imports: strings.Fields(f[3])})
	}
	return pkgs
}

// TestOneAssembly keeps internal/service the one place that turns the
// configuration into running objects: only it and the commands import
// internal/config, only the commands import internal/service, and no
// package that sees the configuration but internal/service calls a
// constructor of a running object.
func TestOneAssembly(t *testing.T) {
	fset := token.NewFileSet()
	calls := 0
	for _, p := range listPackages(t) {
		command := strings.HasPrefix(p.path, mod+"/cmd/")
		assembly := p.path == mod+"/internal/service"
		seesConfig := contains(p.imports, mod+"/internal/config")
		switch {
		case seesConfig && !command && !assembly:
			t.Errorf("%s imports internal/config: only internal/service and the commands read the configuration", p.path)
		case contains(p.imports, mod+"/internal/service") && !command:
			t.Errorf("%s imports internal/service: only the commands (and tests) assemble a service", p.path)
		}
		if !seesConfig || assembly {
			continue
		}
		for _, name := range p.files {
			f, err := parser.ParseFile(fset, filepath.Join(p.dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			local := map[string]string{} // import name → path
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				n := path[strings.LastIndex(path, "/")+1:]
				if im.Name != nil {
					n = im.Name.Name
				}
				local[n] = path
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				calls++
				if contains(constructors[local[x.Name]], sel.Sel.Name) {
					t.Errorf("%s: %s.%s builds a running object outside internal/service: add it to the assembly", fset.Position(sel.Pos()), x.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
	if calls == 0 {
		t.Fatal("no selector was inspected")
	}
}

// TestCommandFunctionsAreShort bounds every function under cmd/ to
// maxCommandFuncLines lines.
func TestCommandFunctionsAreShort(t *testing.T) {
	fset := token.NewFileSet()
	funcs := 0
	for _, p := range listPackages(t) {
		if !strings.HasPrefix(p.path, mod+"/cmd/") {
			continue
		}
		for _, name := range p.files {
			f, err := parser.ParseFile(fset, filepath.Join(p.dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				funcs++
				start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
				if n := end.Line - start.Line + 1; n > maxCommandFuncLines {
					t.Errorf("%s: %s is %d lines, more than %d: move wiring into internal/service, or split it", start, fn.Name.Name, n, maxCommandFuncLines)
				}
			}
		}
	}
	if funcs == 0 {
		t.Fatal("no function under cmd/")
	}
}
