package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/plural"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// Config is one load run.
type Config struct {
	// Concurrency is the number of callers, each with one call in flight.
	Concurrency int
	// Duration bounds the run.
	Duration time.Duration
	// MaxExecutions, when positive, also bounds the run: the number of
	// calls made.
	MaxExecutions int
	// Source is the JavaScript each call runs; Input its input JSON.
	Source, Input string
	// CallTimeout is the deadline of one call.
	CallTimeout time.Duration
	// Token, when set, is sent as a bearer token.
	Token string
}

func (c Config) validate() error {
	switch {
	case c.Concurrency <= 0 || c.Concurrency > 10000:
		return errors.New("-c must be between 1 and 10000")
	case c.Duration <= 0:
		return errors.New("-d must be positive")
	case c.MaxExecutions < 0:
		return errors.New("-n must not be negative")
	case c.CallTimeout <= 0:
		return errors.New("-timeout must be positive")
	case c.Source == "":
		return errors.New("the script is empty")
	}
	return nil
}

// Report is the outcome of a run. A call either ends with a response (an
// execution: the script ran, successfully or not) or with a gRPC error (a
// failed call: refused, unreachable, cut off). Throughput and latencies
// count executions only; failed calls are counted by code, never as
// throughput. Latencies are in milliseconds.
type Report struct {
	Concurrency int     `json:"concurrency"`
	Elapsed     float64 `json:"elapsed_seconds"`
	// Calls is every call that ended during the run.
	Calls int `json:"calls"`
	// Executions is the calls answered with a response; OK those whose
	// script succeeded.
	Executions int `json:"executions"`
	OK         int `json:"ok"`
	// FailedCalls is the calls that ended with a gRPC error.
	FailedCalls int `json:"failed_calls"`
	// PerSecond is executions per second; OKPerSecond counts only
	// successful ones.
	PerSecond   float64 `json:"executions_per_second"`
	OKPerSecond float64 `json:"ok_per_second"`
	P50         float64 `json:"p50_ms"`
	P90         float64 `json:"p90_ms"`
	P99         float64 `json:"p99_ms"`
	Max         float64 `json:"max_ms"`
	// QueueP99 is the 99th percentile of the server-reported admission wait.
	QueueP99 float64 `json:"queue_p99_ms"`
	// Outcomes counts executions: "ok" and script error kinds.
	Outcomes map[string]int `json:"outcomes"`
	// Errors counts failed calls by gRPC code ("UNAVAILABLE"), and
	// ErrorMessages holds the first message of each code.
	Errors        map[string]int    `json:"errors,omitempty"`
	ErrorMessages map[string]string `json:"error_messages,omitempty"`
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "calls        %s in %.2fs with %s: %s, %s\n", plural.Count(r.Calls, "call", "calls"), r.Elapsed,
		plural.Count(r.Concurrency, "caller", "callers"), plural.Count(r.Executions, "execution", "executions"),
		plural.Count(r.FailedCalls, "failed call", "failed calls"))
	fmt.Fprintf(w, "throughput   %.1f executions/s (%.1f ok/s); failed calls are not counted\n", r.PerSecond, r.OKPerSecond)
	if r.Executions > 0 {
		fmt.Fprintf(w, "latency      p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.2fms\n", r.P50, r.P90, r.P99, r.Max)
		fmt.Fprintf(w, "queue time   p99 %.2fms\n", r.QueueP99)
	}
	fmt.Fprintf(w, "outcomes     %s\n", counts(r.Outcomes))
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "errors       %s\n", counts(r.Errors))
		for _, k := range sortedKeys(r.ErrorMessages) {
			fmt.Fprintf(w, "  %s: %s\n", k, r.ErrorMessages[k])
		}
	}
}

// counts formats a count per name, sorted by name: "ok=3 SCRIPT_ERROR=1".
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sample is one call's result: an execution's outcome, or a failed
// call's code and message.
type sample struct {
	latency, queue time.Duration
	outcome        string
	code, message  string
}

// request is the one Execute request every call sends.
func (c Config) request() *ptcv1.ExecuteRequest {
	return &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_JAVASCRIPT, Source: c.Source}, InputJson: c.Input}
}

// withToken adds the bearer token, if any, to ctx.
func (c Config) withToken(ctx context.Context) context.Context {
	if c.Token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.Token)
}

// Reach sends one Execute, which is not measured, so that a run that
// could only fail stops before it starts. It fails when the server cannot
// be reached within timeout (the connection error: refused, unresolvable,
// TLS; or the timeout), when the address does not serve RunnerService, and
// when the server refuses the request itself (UNAUTHENTICATED, a malformed
// script, ...): every call would be refused alike. Only RESOURCE_EXHAUSTED,
// a server busy right now, lets the run go on.
func Reach(ctx context.Context, conn grpc.ClientConnInterface, cfg Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(cfg.withToken(ctx), timeout)
	defer cancel()
	_, err := ptcv1.NewRunnerServiceClient(conn).Execute(ctx, cfg.request())
	st := status.Convert(err)
	switch {
	case err == nil, st.Code() == codes.ResourceExhausted:
		return nil
	case st.Code() == codes.Unavailable:
		return fmt.Errorf("cannot reach it: %s", st.Message())
	case st.Code() == codes.DeadlineExceeded && ctx.Err() != nil:
		return fmt.Errorf("cannot reach it: no answer within %s (-connect-timeout)", timeout)
	case st.Code() == codes.Unimplemented:
		return fmt.Errorf("it does not serve ptc.v1.RunnerService: UNIMPLEMENTED: %s", st.Message())
	}
	return fmt.Errorf("it refused the first call, so it would refuse them all: %s: %s", fault.Code(st.Code()), st.Message())
}

// Run drives conn with cfg and returns the report. Callers stop starting
// calls at the duration, at MaxExecutions, or when ctx ends. A call waits
// for the connection to be ready (up to CallTimeout) rather than failing
// at once, so that a server that goes away mid-run is not hammered: call
// Reach first to fail fast on a server that is not there.
func Run(ctx context.Context, conn grpc.ClientConnInterface, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rpc := ptcv1.NewRunnerServiceClient(conn)
	req := cfg.request()
	// The run ends at end; calls in flight then finish (bounded by
	// CallTimeout) so that the deadline never shows up as a failed call.
	end := time.Now().Add(cfg.Duration)
	ctx = cfg.withToken(ctx)
	var started atomic.Int64
	per := make([][]sample, cfg.Concurrency)
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range per {
		wg.Add(1)
		// Caller i ends when the run's context ends or the budget is spent.
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(end) {
				if cfg.MaxExecutions > 0 && started.Add(1) > int64(cfg.MaxExecutions) {
					return
				}
				cctx, ccancel := context.WithTimeout(ctx, cfg.CallTimeout)
				t0 := time.Now()
				res, err := rpc.Execute(cctx, req, grpc.WaitForReady(true))
				lat := time.Since(t0)
				ccancel()
				if err != nil && ctx.Err() != nil {
					return // interrupted (Ctrl-C): not a sample
				}
				s := sample{latency: lat, outcome: "ok"}
				switch {
				case err != nil:
					st := status.Convert(err)
					s.outcome, s.code, s.message = "", fault.Code(st.Code()).String(), st.Message()
				case res.GetError() != nil:
					s.outcome = strings.TrimPrefix(res.GetError().GetKind().String(), "ERROR_KIND_")
				}
				s.queue = res.GetStats().GetQueueTime().AsDuration()
				per[i] = append(per[i], s)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	return report(cfg.Concurrency, elapsed, slices.Concat(per...)), nil
}

func report(concurrency int, elapsed time.Duration, all []sample) *Report {
	r := &Report{Concurrency: concurrency, Elapsed: elapsed.Seconds(), Calls: len(all), Outcomes: map[string]int{}}
	lat := make([]time.Duration, 0, len(all))
	queue := make([]time.Duration, 0, len(all))
	for _, s := range all {
		if s.code != "" {
			r.FailedCalls++
			if r.Errors == nil {
				r.Errors, r.ErrorMessages = map[string]int{}, map[string]string{}
			}
			if r.Errors[s.code]++; r.Errors[s.code] == 1 {
				r.ErrorMessages[s.code] = s.message
			}
			continue
		}
		r.Executions++
		r.Outcomes[s.outcome]++
		lat = append(lat, s.latency)
		queue = append(queue, s.queue)
	}
	r.OK = r.Outcomes["ok"]
	if elapsed > 0 {
		r.PerSecond = float64(r.Executions) / elapsed.Seconds()
		r.OKPerSecond = float64(r.OK) / elapsed.Seconds()
	}
	slices.Sort(lat)
	slices.Sort(queue)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	r.P50, r.P90, r.P99 = ms(percentile(lat, 50)), ms(percentile(lat, 90)), ms(percentile(lat, 99))
	if len(lat) > 0 {
		r.Max = ms(lat[len(lat)-1])
	}
	r.QueueP99 = ms(percentile(queue, 99))
	return r
}

// percentile returns the nearest-rank percentile of sorted values.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}
