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
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// Config is one load run.
type Config struct {
	// Concurrency is the number of callers, each with one call in flight.
	Concurrency int
	// Duration bounds the run.
	Duration time.Duration
	// MaxExecutions, when positive, also bounds the run.
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

// Report is the outcome of a run. Latencies are in milliseconds.
type Report struct {
	Concurrency int     `json:"concurrency"`
	Elapsed     float64 `json:"elapsed_seconds"`
	Executions  int     `json:"executions"`
	OK          int     `json:"ok"`
	PerSecond   float64 `json:"executions_per_second"`
	// OKPerSecond counts only successful executions.
	OKPerSecond float64 `json:"ok_per_second"`
	P50         float64 `json:"p50_ms"`
	P90         float64 `json:"p90_ms"`
	P99         float64 `json:"p99_ms"`
	Max         float64 `json:"max_ms"`
	// QueueP99 is the 99th percentile of the server-reported admission wait.
	QueueP99 float64 `json:"queue_p99_ms"`
	// Outcomes counts "ok", script error kinds and gRPC codes.
	Outcomes map[string]int `json:"outcomes"`
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "executions   %d in %.2fs with %d callers\n", r.Executions, r.Elapsed, r.Concurrency)
	fmt.Fprintf(w, "throughput   %.1f executions/s (%.1f ok/s)\n", r.PerSecond, r.OKPerSecond)
	fmt.Fprintf(w, "latency      p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.2fms\n", r.P50, r.P90, r.P99, r.Max)
	fmt.Fprintf(w, "queue time   p99 %.2fms\n", r.QueueP99)
	keys := make([]string, 0, len(r.Outcomes))
	for k := range r.Outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, r.Outcomes[k]))
	}
	fmt.Fprintf(w, "outcomes     %s\n", strings.Join(parts, " "))
}

// sample is one call's result.
type sample struct {
	latency, queue time.Duration
	outcome        string
}

// Run drives conn with cfg and returns the report. Callers stop starting
// calls at the duration, at MaxExecutions, or when ctx ends.
func Run(ctx context.Context, conn grpc.ClientConnInterface, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rpc := ptcv1.NewRunnerServiceClient(conn)
	req := &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_JAVASCRIPT, Source: cfg.Source}, InputJson: cfg.Input}
	// The run ends at end; calls in flight then finish (bounded by
	// CallTimeout) so that the deadline never shows up as a failed call.
	end := time.Now().Add(cfg.Duration)
	if cfg.Token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+cfg.Token)
	}
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
				res, err := rpc.Execute(cctx, req)
				lat := time.Since(t0)
				ccancel()
				if err != nil && ctx.Err() != nil {
					return // interrupted (Ctrl-C): not a sample
				}
				s := sample{latency: lat, outcome: "ok"}
				switch {
				case err != nil:
					s.outcome = "grpc_" + status.Code(err).String()
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
	r := &Report{Concurrency: concurrency, Elapsed: elapsed.Seconds(), Executions: len(all), Outcomes: map[string]int{}}
	lat := make([]time.Duration, 0, len(all))
	queue := make([]time.Duration, 0, len(all))
	for _, s := range all {
		r.Outcomes[s.outcome]++
		lat = append(lat, s.latency)
		queue = append(queue, s.queue)
	}
	r.OK = r.Outcomes["ok"]
	if elapsed > 0 {
		r.PerSecond = float64(len(all)) / elapsed.Seconds()
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
