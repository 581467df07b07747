package metrics

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

func TestObserveAndScrape(t *testing.T) {
	queued := 3
	m := New(Gauges{Queued: func() int { return queued }})
	m.ObserveExecution(Execution{Language: "javascript", Outcome: OutcomeOK, Duration: time.Second, CPUTime: time.Millisecond,
		ToolResultBytes: 1000, OutputBytes: 10, Calls: []ToolCall{{Tool: "crm.search", Outcome: OutcomeOK, Duration: time.Millisecond}, {Tool: ClientTool, Outcome: "timeout"}}})
	m.ObserveExecution(Execution{Language: "wasm", Outcome: "MEMORY_LIMIT", LogsTruncated: true})
	m.ObserveExecution(Execution{Language: "javascript", Outcome: "OUTPUT_LIMIT", ToolResultBytes: -5})
	m.ObserveAdmitted(time.Millisecond)
	m.ObserveRejected("queue_full")
	m.ObserveRateLimited()
	m.ObservePanic()
	h := m.Handler(nil)
	code, body := get(t, h, "/metrics")
	if code != 200 {
		t.Fatal(code)
	}
	wants := []string{
		`ptc_executions_total{language="javascript",outcome="ok"} 1`,
		`ptc_executions_total{language="wasm",outcome="MEMORY_LIMIT"} 1`,
		`ptc_limit_breaches_total{limit="memory"} 1`,
		`ptc_limit_breaches_total{limit="log_bytes"} 1`,
		`ptc_limit_breaches_total{limit="output_bytes"} 1`,
		`ptc_tool_calls_total{outcome="ok",tool="crm.search"} 1`,
		`ptc_tool_calls_total{outcome="timeout",tool="(client)"} 1`,
		`ptc_tool_result_bytes_total 1000`,
		`ptc_output_bytes_total 10`,
		`ptc_admission_queue_depth 3`,
		`ptc_executions_running 0`,
		`ptc_admission_rejected_total{reason="queue_full"} 1`,
		`ptc_admission_wait_seconds_count 1`,
		`ptc_rate_limited_total 1`,
		`ptc_panics_recovered_total 1`,
		`ptc_worker_pool_size 0`,
		`ptc_worker_restarts_total{reason="died"} 0`,
		`ptc_workers_started_total 0`,
		`ptc_execution_cpu_seconds_count{language="javascript"} 2`,
	}
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("missing %q", w)
		}
	}
	m.SetWorkerStats(func() WorkerStats { return WorkerStats{Alive: 4, Started: 7, Died: 1, Recycled: 2} })
	_, body = get(t, h, "/metrics")
	for _, w := range []string{"ptc_worker_pool_size 4", "ptc_workers_started_total 7", `ptc_worker_restarts_total{reason="died"} 1`,
		`ptc_worker_restarts_total{reason="recycled"} 2`, `ptc_worker_restarts_total{reason="killed"} 0`} {
		if !strings.Contains(body, w) {
			t.Errorf("worker stats: missing %q", w)
		}
	}
}

func TestHealthAndReady(t *testing.T) {
	var notReady error
	h := New(Gauges{}).Handler(func() error { return notReady })
	cases := []struct {
		name  string
		path  string
		err   error
		code  int
		match string
	}{
		{"healthz", "/healthz", nil, 200, "ok"},
		{"healthz while not ready", "/healthz", errors.New("draining"), 200, "ok"},
		{"ready", "/readyz", nil, 200, "ready"},
		{"not ready", "/readyz", errors.New("draining"), 503, "not ready: draining"},
		{"unknown path", "/nope", nil, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			notReady = tc.err
			code, body := get(t, h, tc.path)
			if code != tc.code || !strings.Contains(body, tc.match) {
				t.Fatalf("%d %q", code, body)
			}
		})
	}
}

func BenchmarkObserveExecution(b *testing.B) {
	m := New(Gauges{})
	e := Execution{Language: "javascript", Outcome: OutcomeOK, Duration: time.Millisecond,
		Calls: []ToolCall{{Tool: "a", Outcome: OutcomeOK}, {Tool: "b", Outcome: OutcomeOK}}}
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveExecution(e)
	}
}
