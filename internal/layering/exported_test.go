package layering

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// listed is what `go list -json -export` says of one package.
type listed struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Export     string
	Standard   bool
}

// TestNoInternalTypesInPublicAPI type-checks every importable package that
// is not internal (and not a command) and reports each exported name whose
// declaration mentions a type from an internal package: a function's or
// method's parameters and results, a type's definition (exported fields
// and interface methods), the exported methods of an exported type, and an
// exported variable's or constant's type. Such a name is public in name
// only: no caller outside the module can write the type it needs. Give it
// a public type or move it under internal/.
func TestNoInternalTypesInPublicAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks every public package against the export data of its dependencies")
	}
	cmd := exec.Command("go", "list", "-e", "-json", "-export", "-deps", mod+"/...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	var public []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		exports[p.ImportPath] = p.Export
		if p.Standard || !match(mod+"/...", p.ImportPath) || p.Name == "main" || isInternal(p.ImportPath) {
			continue
		}
		public = append(public, p)
	}
	if len(public) < 10 {
		t.Fatalf("go list found only %d public packages", len(public))
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var offenders []string
	for _, p := range public {
		var files []*ast.File
		for _, name := range append(append([]string{}, p.GoFiles...), p.CgoFiles...) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parsing %s: %v", name, err)
			}
			files = append(files, f)
		}
		conf := types.Config{Importer: imp.(types.ImporterFrom), FakeImportC: true}
		pkg, err := conf.Check(p.ImportPath, fset, files, nil)
		if err != nil {
			t.Fatalf("type-checking %s: %v", p.ImportPath, err)
		}
		offenders = append(offenders, internalMentions(pkg)...)
	}
	sort.Strings(offenders)
	for _, o := range offenders {
		t.Errorf("%s", o)
	}
	if len(offenders) > 0 {
		t.Logf("%d exported names need an internal type to use: give each a public type or move it under internal/", len(offenders))
	}
}

// isInternal reports whether path is an internal package, which only
// packages of its parent may import.
func isInternal(path string) bool {
	return strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/")
}

// internalMentions lists, as "pkg.Name: internal/type", the exported names
// of pkg whose declarations mention a type from an internal package.
func internalMentions(pkg *types.Package) []string {
	var out []string
	report := func(name string, typ types.Type) {
		if in := firstInternal(typ, map[types.Type]bool{}); in != "" {
			out = append(out, fmt.Sprintf("%s.%s mentions %s", pkg.Path(), name, in))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.TypeName:
			if o.IsAlias() {
				report(name, o.Type())
				continue
			}
			named, ok := o.Type().(*types.Named)
			if !ok {
				continue
			}
			report(name, named.Underlying())
			ms := types.NewMethodSet(types.NewPointer(named))
			for i := 0; i < ms.Len(); i++ {
				m := ms.At(i).Obj()
				if m.Exported() {
					report(name+"."+m.Name(), m.Type())
				}
			}
		default:
			report(name, o.Type())
		}
	}
	return out
}

// firstInternal returns the first type from an internal package that typ
// mentions, looking through composite types, exported struct fields and
// interface methods but not into the definitions of named types (a named
// type from a public package is checked on its own).
func firstInternal(typ types.Type, seen map[types.Type]bool) string {
	if typ == nil || seen[typ] {
		return ""
	}
	seen[typ] = true
	switch t := typ.(type) {
	case *types.Alias:
		if obj := t.Obj(); obj.Pkg() != nil && isInternal(obj.Pkg().Path()) {
			return obj.Pkg().Path() + "." + obj.Name()
		}
		return firstInternal(types.Unalias(t), seen)
	case *types.Named:
		if obj := t.Obj(); obj.Pkg() != nil && isInternal(obj.Pkg().Path()) {
			return obj.Pkg().Path() + "." + obj.Name()
		}
		for i := 0; i < t.TypeArgs().Len(); i++ {
			if in := firstInternal(t.TypeArgs().At(i), seen); in != "" {
				return in
			}
		}
	case *types.Pointer:
		return firstInternal(t.Elem(), seen)
	case *types.Slice:
		return firstInternal(t.Elem(), seen)
	case *types.Array:
		return firstInternal(t.Elem(), seen)
	case *types.Chan:
		return firstInternal(t.Elem(), seen)
	case *types.Map:
		if in := firstInternal(t.Key(), seen); in != "" {
			return in
		}
		return firstInternal(t.Elem(), seen)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := 0; i < tup.Len(); i++ {
				if in := firstInternal(tup.At(i).Type(), seen); in != "" {
					return in
				}
			}
		}
	case *types.Struct:
		for i := 0; i < t.NumFields(); i++ {
			if f := t.Field(i); f.Exported() {
				if in := firstInternal(f.Type(), seen); in != "" {
					return "field " + f.Name() + ": " + in
				}
			}
		}
	case *types.Interface:
		for i := 0; i < t.NumMethods(); i++ {
			if m := t.Method(i); m.Exported() {
				if in := firstInternal(m.Type(), seen); in != "" {
					return "method " + m.Name() + ": " + in
				}
			}
		}
		for i := 0; i < t.NumEmbeddeds(); i++ {
			if in := firstInternal(t.EmbeddedType(i), seen); in != "" {
				return in
			}
		}
	case *types.TypeParam:
		return firstInternal(t.Constraint(), seen)
	}
	return ""
}

// TestInternalMentions checks the checker: each exported form that can
// carry an internal type is reported, and what cannot reach one is not.
func TestInternalMentions(t *testing.T) {
	inner := types.NewPackage("example.com/m/internal/core", "core")
	lang := types.NewTypeName(token.NoPos, inner, "Language", nil)
	types.NewNamed(lang, types.Typ[types.String], nil)
	inner.Scope().Insert(lang)
	inner.MarkComplete()
	imp := importerFunc(func(path string) (*types.Package, error) {
		if path == inner.Path() {
			return inner, nil
		}
		return nil, fmt.Errorf("unknown package %s", path)
	})
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"clean", `type T struct{ A string; b core.Language }
func (T) m(core.Language) {}
func F(x int) string { return "" }
var V = 1`, nil},
		{"field", `type Job struct{ Language core.Language }`,
			[]string{"example.com/m/p.Job mentions field Language: example.com/m/internal/core.Language"}},
		{"func param", `func F(l core.Language) {}`,
			[]string{"example.com/m/p.F mentions example.com/m/internal/core.Language"}},
		{"method result", `type T int
func (*T) Lang() []core.Language { return nil }`,
			[]string{"example.com/m/p.T.Lang mentions example.com/m/internal/core.Language"}},
		{"alias", `type L = core.Language`,
			[]string{"example.com/m/p.L mentions example.com/m/internal/core.Language"}},
		{"var", `var V map[string]core.Language`,
			[]string{"example.com/m/p.V mentions example.com/m/internal/core.Language"}},
		{"interface method", `type I interface{ Run(func(core.Language)) }`,
			[]string{"example.com/m/p.I mentions method Run: example.com/m/internal/core.Language"}},
		{"generic", `type Box[T any] struct{ V T }
func F() Box[core.Language] { return Box[core.Language]{} }`,
			[]string{"example.com/m/p.F mentions example.com/m/internal/core.Language"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			src := "package p\nimport \"example.com/m/internal/core\"\nvar _ core.Language\n" + tt.src
			f, err := parser.ParseFile(fset, "p.go", src, 0)
			if err != nil {
				t.Fatal(err)
			}
			pkg, err := (&types.Config{Importer: imp}).Check("example.com/m/p", fset, []*ast.File{f}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := internalMentions(pkg)
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// importerFunc makes a function a types.Importer.
type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
