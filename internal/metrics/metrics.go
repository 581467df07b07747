// Package metrics holds ptcd's Prometheus metrics: the gRPC server
// metrics of go-grpc-middleware and ptc's execution metrics, in one
// registry owned by the server (never the global default registry), and
// the HTTP handler that serves /metrics, /healthz and /readyz.
//
// Label values are bounded: languages and error kinds are enums, tool
// names are server tools only (client tools, which callers name, count
// under "(client)"), and limits are a fixed set.
package metrics

import (
	"net/http"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every ptc metric.
const Namespace = "ptc"

// ClientTool is the tool label of every client-served tool.
const ClientTool = "(client)"

// UnknownTool is the tool label of calls to names that are no tool.
const UnknownTool = "(unknown)"

// OutcomeOK is the outcome label of a successful execution or tool call.
const OutcomeOK = "ok"

// Limit label values of ptc_limit_breaches_total.
const (
	LimitTimeout   = "timeout"
	LimitCPU       = "cpu_time"
	LimitMemory    = "memory"
	LimitToolCalls = "tool_calls"
	LimitOutput    = "output_bytes"
	LimitLogs      = "log_bytes"
)

// WorkerStats is what the worker process pool reports (the fields match
// internal/runtime/worker's Stats, so its Pool.Stats adapts in one line).
type WorkerStats struct {
	// Alive is the number of worker processes running now.
	Alive int
	// Started counts workers started; Died, Recycled and Killed count
	// workers that ended unexpectedly, were replaced after a breach or
	// their quota, and were killed at a deadline or cancel.
	Started, Died, Recycled, Killed int64
}

// ToolCall is one tool call of an execution, as metrics see it.
type ToolCall struct {
	// Tool is the tool's name, or ClientTool.
	Tool string
	// Outcome is OutcomeOK or the tool error code.
	Outcome  string
	Duration time.Duration
}

// Execution is one finished execution, as metrics see it.
type Execution struct {
	// Language is "javascript", "typescript" or "wasm".
	Language string
	// Outcome is OutcomeOK, the error kind (e.g. "TIMEOUT"), or for a
	// segment that paused, OutcomePaused.
	Outcome string
	// Paused reports a segment of a resumable execution that ended in a
	// pause: the execution goes on, so it is counted as a segment only.
	// Duration and CPUTime are the execution's so far (cumulative).
	Paused          bool
	Duration        time.Duration
	CPUTime         time.Duration
	ToolResultBytes int64
	OutputBytes     int64
	// LogsTruncated reports that console output hit its cap.
	LogsTruncated bool
	Calls         []ToolCall
}

// Metrics is the server's registry and its collectors. Create it with New.
type Metrics struct {
	// Registry holds every metric below and the Go and process collectors.
	Registry *prometheus.Registry
	// GRPC provides the gRPC server interceptors.
	GRPC *grpcprom.ServerMetrics

	executions  *prometheus.CounterVec
	segments    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	cpu         *prometheus.HistogramVec
	toolCalls   *prometheus.CounterVec
	toolLatency *prometheus.HistogramVec
	breaches    *prometheus.CounterVec
	toolBytes   prometheus.Counter
	outputBytes prometheus.Counter
	queueWait   prometheus.Histogram
	rejected    *prometheus.CounterVec
	rateLimited prometheus.Counter
	panics      prometheus.Counter

	mu    sync.Mutex
	stats func() WorkerStats
}

// Gauges are read when scraped: the admission controller's state and
// executions in flight.
type Gauges struct {
	// Running returns the executions running; nil reads 0.
	Running func() int
	// Queued returns the requests waiting for admission; nil reads 0.
	Queued func() int
}

// New returns a Metrics with every collector registered.
func New(g Gauges) *Metrics {
	secs := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		GRPC: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets(secs))),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "executions_total",
			Help: "Executions that ran, by language and outcome (ok or the error kind)."}, []string{"language", "outcome"}),
		segments: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "execution_segments_total",
			Help: "Runs of a script between pauses, by language and outcome (REQUIRES_ACTION for one that paused); an execution that never pauses is one segment."}, []string{"language", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "execution_duration_seconds",
			Help: "Wall time of executions, tool waits included.", Buckets: secs}, []string{"language"}),
		cpu: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "execution_cpu_seconds",
			Help: "CPU time the sandbox computed per execution.", Buckets: secs}, []string{"language"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "tool_calls_total",
			Help: "Tool calls by tool and outcome (ok or the tool error code)."}, []string{"tool", "outcome"}),
		toolLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "tool_call_duration_seconds",
			Help: "Tool call latency, waiting for a concurrency slot included.", Buckets: secs}, []string{"tool"}),
		breaches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "limit_breaches_total",
			Help: "Executions that hit a limit, by limit."}, []string{"limit"}),
		toolBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "tool_result_bytes_total",
			Help: "JSON bytes tools delivered into sandboxes."}),
		outputBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "output_bytes_total",
			Help: "JSON bytes of results returned to callers."}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "admission_wait_seconds",
			Help: "Time admitted executions waited for a slot.", Buckets: secs}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "admission_rejected_total",
			Help: "Requests refused by admission control, by reason."}, []string{"reason"}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "rate_limited_total",
			Help: "Requests refused by a tenant's rate limit."}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "panics_recovered_total",
			Help: "Panics in request handling recovered into INTERNAL."}),
	}
	read := func(f func() int) func() float64 {
		return func() float64 {
			if f == nil {
				return 0
			}
			return float64(f())
		}
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.GRPC, m.executions, m.segments, m.duration, m.cpu, m.toolCalls, m.toolLatency, m.breaches,
		m.toolBytes, m.outputBytes, m.queueWait, m.rejected, m.rateLimited, m.panics,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "executions_running",
			Help: "Executions holding an admission slot."}, read(g.Running)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "admission_queue_depth",
			Help: "Requests waiting for an admission slot."}, read(g.Queued)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "worker_pool_size",
			Help: "Worker processes alive (0 when executions run in-process)."}, func() float64 {
			return float64(m.workerStats().Alive)
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "workers_started_total",
			Help: "Worker processes started (0 when executions run in-process)."}, func() float64 {
			return float64(m.workerStats().Started)
		}),
		workerRestarts{m: m, desc: prometheus.NewDesc(Namespace+"_worker_restarts_total",
			"Worker processes replaced, by reason: died (ended unexpectedly), recycled (after a breach or their quota), killed (at a deadline or cancel).",
			[]string{"reason"}, nil)},
	)
	return m
}

// SetWorkerStats makes the worker pool metrics read f (called at each
// scrape). Until it is set they read 0.
func (m *Metrics) SetWorkerStats(f func() WorkerStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats = f
}

func (m *Metrics) workerStats() WorkerStats {
	m.mu.Lock()
	f := m.stats
	m.mu.Unlock()
	if f == nil {
		return WorkerStats{}
	}
	return f()
}

// workerRestarts collects ptc_worker_restarts_total by reason from one
// reading of the worker stats.
type workerRestarts struct {
	m    *Metrics
	desc *prometheus.Desc
}

// Describe sends the one descriptor.
func (w workerRestarts) Describe(ch chan<- *prometheus.Desc) { ch <- w.desc }

// Collect reads the worker stats once and sends a counter per reason.
func (w workerRestarts) Collect(ch chan<- prometheus.Metric) {
	st := w.m.workerStats()
	for _, r := range []struct {
		reason string
		n      int64
	}{{"died", st.Died}, {"recycled", st.Recycled}, {"killed", st.Killed}} {
		ch <- prometheus.MustNewConstMetric(w.desc, prometheus.CounterValue, float64(r.n), r.reason)
	}
}

// breachOf maps an error kind to the limit it breached.
var breachOf = map[string]string{
	"TIMEOUT":         LimitTimeout,
	"CPU_LIMIT":       LimitCPU,
	"MEMORY_LIMIT":    LimitMemory,
	"TOOL_CALL_LIMIT": LimitToolCalls,
	"OUTPUT_LIMIT":    LimitOutput,
}

// ObserveExecution counts one segment of an execution (an execution that
// never pauses is one) and the tool calls it made; at the execution's end
// (a segment that did not pause) it counts the execution once, with its
// total duration and CPU time.
func (m *Metrics) ObserveExecution(e Execution) {
	m.segments.WithLabelValues(e.Language, e.Outcome).Inc()
	if !e.Paused {
		m.executions.WithLabelValues(e.Language, e.Outcome).Inc()
		m.duration.WithLabelValues(e.Language).Observe(e.Duration.Seconds())
		m.cpu.WithLabelValues(e.Language).Observe(e.CPUTime.Seconds())
		if l, ok := breachOf[e.Outcome]; ok {
			m.breaches.WithLabelValues(l).Inc()
		}
	}
	if e.LogsTruncated {
		m.breaches.WithLabelValues(LimitLogs).Inc()
	}
	m.toolBytes.Add(float64(max(e.ToolResultBytes, 0)))
	m.outputBytes.Add(float64(max(e.OutputBytes, 0)))
	for _, c := range e.Calls {
		m.toolCalls.WithLabelValues(c.Tool, c.Outcome).Inc()
		m.toolLatency.WithLabelValues(c.Tool).Observe(c.Duration.Seconds())
	}
}

// ObserveAdmitted records the wait of an admitted execution.
func (m *Metrics) ObserveAdmitted(wait time.Duration) { m.queueWait.Observe(wait.Seconds()) }

// ObserveRejected counts a request refused by admission control.
func (m *Metrics) ObserveRejected(reason string) { m.rejected.WithLabelValues(reason).Inc() }

// ObserveRateLimited counts a request refused by a tenant's rate limit.
func (m *Metrics) ObserveRateLimited() { m.rateLimited.Inc() }

// ObservePanic counts a recovered panic.
func (m *Metrics) ObservePanic() { m.panics.Inc() }

// Handler serves /metrics from the registry, /healthz (the process is
// alive: always 200) and /readyz (200 when ready is nil or returns nil,
// else 503 with the reason).
func (m *Metrics) Handler(ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry, MaxRequestsInFlight: 4}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		var err error
		if ready != nil {
			err = ready()
		}
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	return mux
}
