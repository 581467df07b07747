package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// metricNameRE finds metric names in PromQL and in the docs' table.
var metricNameRE = regexp.MustCompile(`\b(?:ptc|grpc_server|process|go)_[a-z_]+\b`)

// exported returns the name of every series family the registry serves,
// every collector made to report (histograms also as _bucket, _sum and
// _count).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	m := New(Gauges{})
	m.SetWorkerStats(func() WorkerStats { return WorkerStats{} })
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	m.GRPC.InitializeMetrics(gs)
	m.ObserveExecution(Execution{Language: "javascript", Outcome: "OUTPUT_LIMIT", Duration: time.Millisecond, LogsTruncated: true,
		Calls: []ToolCall{{Tool: "t", Outcome: OutcomeOK, Duration: time.Millisecond}}})
	m.ObserveAdmitted(time.Millisecond)
	m.ObserveRejected("queue_full")
	m.ObserveRateLimited()
	m.ObservePanic()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range fams {
		n := f.GetName()
		out[n] = true
		if f.GetType().String() == "HISTOGRAM" {
			out[n+"_bucket"], out[n+"_sum"], out[n+"_count"] = true, true, true
		}
	}
	return out
}

// TestDashboardNamesRealMetrics: every metric the Grafana dashboard in
// examples/ queries, and every metric docs/operations.md lists, is one ptcd
// serves; and the dashboard covers every ptc_ metric.
func TestDashboardNamesRealMetrics(t *testing.T) {
	have := exported(t)
	raw, err := os.ReadFile("../../examples/grafana/ptcd-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct{ List []struct{ Definition string } }
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	queried := map[string]bool{}
	var exprs []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	for _, e := range exprs {
		for _, n := range metricNameRE.FindAllString(e, -1) {
			queried[n] = true
			if !have[n] {
				t.Errorf("the dashboard queries %s, which ptcd does not serve (query %s)", n, e)
			}
		}
	}
	for n := range have {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
		if strings.HasPrefix(n, "ptc_") && !queried[n] && !queried[base+"_bucket"] && !queried[base] {
			t.Errorf("metric %s is on no dashboard panel", n)
		}
	}

	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, n := range metricNameRE.FindAllString(string(doc), -1) {
		if !have[n] && !strings.HasSuffix(n, "_") {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/operations.md names metrics ptcd does not serve: %v", missing)
	}
}
