package layering

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/ptcrun/ptc"

// rule forbids the packages matching from to depend, directly or not, on
// the packages matching any of to (but for the rule's exceptions).
type rule struct {
	from string
	to   []string
	why  string
}

// exceptions are the packages a rule's from may depend on though its to
// matches them.
var exceptions = map[string][]string{
	mod + "/internal/truncate": {mod + "/internal/jsonval"},
}

var (
	grpcAndContract = []string{"google.golang.org/grpc", mod + "/proto/ptc/v1", mod + "/internal/wire"}
	aboveEngines    = []string{mod, mod + "/internal/server", mod + "/internal/executor", mod + "/cmd/..."}
)

var rules = []rule{
	{mod + "/internal/runtime/...", append(append([]string{}, grpcAndContract...), aboveEngines...),
		"engines never import gRPC (not even through ptc.v1), the root package or the server"},
	{mod + "/internal/python", append(append([]string{}, grpcAndContract...), aboveEngines...),
		"the Python engine, like the engines under runtime/, never imports gRPC, the root package or the server"},
	{mod + "/internal/bridge", append(append([]string{mod + "/internal/runtime/..."}, grpcAndContract...), aboveEngines...),
		"the bridge sits below the engines and never imports gRPC"},
	{mod + "/bridge/...", append(append([]string{mod + "/internal/runtime/..."}, grpcAndContract...), aboveEngines...),
		"the guest SDK sits below the engines and never imports gRPC"},
	{mod + "/tools/...", append(append([]string{mod + "/internal/runtime/...", mod + "/internal/bridge", mod + "/bridge/..."}, grpcAndContract...), aboveEngines...),
		"tools never import engines or the bridge"},
	{mod + "/internal/workerproto", grpcAndContract, "the worker protocol has its own messages"},
	{mod + "/internal/durableproto", append(append([]string{mod + "/internal/runtime/...", mod + "/internal/bridge", mod + "/bridge/..."}, grpcAndContract...), aboveEngines...),
		"the encoding of paused executions has its own messages"},
	{mod + "/internal/durable", append(append([]string{mod + "/internal/runtime/...", mod + "/internal/bridge", mod + "/bridge/..."}, grpcAndContract...), aboveEngines...),
		"continuations know the request model, not the engines, the bridge or the wire"},
	{mod + "/internal/core", append([]string{mod + "/internal/runtime/...", mod + "/internal/bridge", mod + "/bridge/...", "google.golang.org/grpc"}, aboveEngines...),
		"the request model is below every layer that uses it"},
	{mod + "/runtime", []string{mod + "/..."}, "runtime is the engines' home in the layout: documentation only"},
	{mod + "/bridge", []string{mod + "/..."}, "bridge is the dispatcher's home in the layout: documentation only"},
	{mod + "/internal/fault", []string{mod + "/..."}, "fault imports nothing of ptc"},
	{mod + "/internal/limits", []string{mod + "/..."}, "limits imports nothing of ptc"},
	{mod + "/internal/cpuclock", []string{mod + "/..."}, "cpuclock imports nothing of ptc"},
	{mod + "/internal/plural", []string{mod + "/..."}, "plural imports nothing of ptc"},
	{mod + "/internal/suggest", []string{mod + "/..."}, "suggest imports nothing of ptc"},
	{mod + "/internal/testenv", []string{mod + "/..."}, "testenv imports nothing of ptc"},
	{mod + "/internal/executor", []string{mod, mod + "/internal/server", mod + "/cmd/...", "google.golang.org/grpc", mod + "/proto/ptc/v1"},
		"the executor sits below the root package and knows no wire"},
	{mod, []string{mod + "/internal/server", mod + "/cmd/..."}, "the root package sits below the server and the commands"},
	{mod + "/internal/wire", []string{mod, mod + "/internal/executor", mod + "/internal/runtime/...", mod + "/internal/bridge", mod + "/bridge/..."},
		"conversions know the model and the contract, not the engines"},
	{mod + "/internal/mcpserve", append([]string{mod + "/internal/runtime/...", mod + "/internal/bridge", mod + "/bridge/..."}, append(append([]string{}, grpcAndContract...), aboveEngines...)...),
		"the MCP front end speaks the request model to a backend it is given; it knows no engine, no gRPC and no server"},
	{mod + "/internal/truncate", []string{mod + "/..."}, "truncation imports nothing of ptc but JSON's one scanner"},
	{mod + "/internal/bridge", []string{"go.opentelemetry.io/..."}, "the bridge reports tool calls to observers; it knows no tracing"},
	{mod + "/internal/runtime/...", []string{"go.opentelemetry.io/..."}, "engines know no tracing: the executor and the bridge's observers make the spans"},
	{mod + "/internal/telemetry", append([]string{openTelemetrySDK, "go.opentelemetry.io/otel/exporters/...", "google.golang.org/grpc"}, aboveEngines...),
		"spans are made with the OpenTelemetry API only"},
	{mod, []string{openTelemetrySDK, "go.opentelemetry.io/otel/exporters/...", mod + "/internal/telemetry/otlp"},
		"the library uses the OpenTelemetry API; the SDK and exporters are ptcd's"},
	{mod + "/tools/...", []string{openTelemetrySDK, "go.opentelemetry.io/otel/exporters/..."},
		"tool sources use the OpenTelemetry API only"},
	{mod + "/internal/config", append([]string{mod + "/internal/runtime/...", mod + "/internal/bridge", mod + "/bridge/...", mod + "/internal/durable", mod + "/internal/telemetry/...",
		mod + "/internal/mcpserve", mod + "/internal/service", mod + "/tools/mcp", mod + "/tools/httpsource", "go.opentelemetry.io/..."}, aboveEngines...),
		"the configuration is data and its validation; internal/service builds the running objects"},
}

// openTelemetrySDK is the OpenTelemetry SDK, which only commands set up.
const openTelemetrySDK = "go.opentelemetry.io/otel/sdk/..."

// match reports whether pkg matches pattern (a path, or a path ending in
// /... for the path and everything under it).
func match(pattern, pkg string) bool {
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == p || strings.HasPrefix(pkg, p+"/")
	}
	return pkg == pattern
}

func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps=false", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		deps[f[0]] = f[1:]
	}
	if len(deps) < 20 {
		t.Fatalf("go list found only %d packages", len(deps))
	}
	// The closure is transitive: the root package reaches gRPC through its
	// Client; were it not, every rule below would pass vacuously.
	if !contains(deps[mod], "google.golang.org/grpc") || !contains(deps[mod+"/internal/runtime/worker"], mod+"/tools") {
		t.Fatal("go list did not report transitive dependencies")
	}
	checked := 0
	for _, r := range rules {
		for pkg, ds := range deps {
			if !match(r.from, pkg) {
				continue
			}
			checked++
			for _, d := range ds {
				for _, to := range r.to {
					if match(to, d) && !match(r.from, d) && !matchAny(exceptions[r.from], d) {
						t.Errorf("%s depends on %s: %s", pkg, d, r.why)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no package matched a rule")
	}
	// Only tests and internal test helpers (internal/.../*test) import
	// testenv.
	for pkg, ds := range deps {
		helper := strings.HasPrefix(pkg, mod+"/internal/") && strings.HasSuffix(pkg, "test")
		if contains(ds, mod+"/internal/testenv") && !helper && pkg != mod+"/internal/testenv" {
			t.Errorf("%s depends on internal/testenv, which is for tests only", pkg)
		}
	}
}

// matchAny reports whether pkg matches one of patterns.
func matchAny(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if match(p, pkg) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
