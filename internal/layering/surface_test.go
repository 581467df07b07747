package layering

import (
	"os/exec"
	"strings"
	"testing"
)

// maxExportedNames bounds ptc's public surface: the lines of `go doc
// -short` (one per exported top-level name; a const or var block counts
// once) over every importable package outside generated code, as
// scripts/api-surface.sh counts them. A new exported name must earn its
// place: raise the bound only with a reason. 152: ptc.ExecutionError and
// ptc.KindOf (a request error and an execution failure are distinct
// types, so neither can carry the other's classification). 153:
// ptc.ConnectionLostError (a Client call whose outcome is unknown must be
// told apart from an Unavailable that never reached the server, as the
// TypeScript and Python clients do). 114: the engines
// (internal/runtime/...) and the dispatcher (internal/bridge) moved under
// internal/, since their API was made of internal types (153 before).
// 115: tools.ErrCheckTooCostly (a document that could not be checked
// against a schema within the check's bound is neither invalid JSON nor
// a violation, and the dispatcher and executor report it as such). 116:
// tools.CompileWith (the executor compiles the schemas of the client
// tools a harness sends with every request through a cache; building a
// Compiled by hand would copy Compile's checks).
const maxExportedNames = 116

func TestPublicSurface(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go doc over every public package")
	}
	out, err := exec.Command("go", "list", mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	total := 0
	for _, p := range strings.Fields(string(out)) {
		rest := strings.TrimPrefix(p, mod)
		if strings.Contains(rest+"/", "/internal/") || strings.HasPrefix(rest, "/cmd/") ||
			strings.HasPrefix(rest, "/examples/") || strings.HasPrefix(rest, "/proto/") {
			continue
		}
		doc, err := exec.Command("go", "doc", "-short", p).Output()
		if err != nil {
			t.Fatalf("go doc %s: %v", p, err)
		}
		n := strings.Count(string(doc), "\n")
		total += n
		t.Logf("%3d %s", n, p)
	}
	if total > maxExportedNames {
		t.Fatalf("%d exported names, more than %d: keep engine and bridge packages to what other ptc packages need, and test-only names in tests", total, maxExportedNames)
	}
	t.Logf("%d exported names (at most %d)", total, maxExportedNames)
}
