// Package otlp sets up ptcd's OpenTelemetry SDK: a tracer provider that
// samples a ratio of traces (a caller's W3C trace context decides for its
// own), batches spans and exports them over OTLP (gRPC or HTTP), and the
// W3C trace context propagator. An exporter that cannot reach its collector
// never fails ptcd: the failure is logged (at most once a minute, with the
// count of spans dropped since) and the spans are dropped.
//
// Only commands import it; the rest of ptc uses the OpenTelemetry API
// through internal/telemetry.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ptcrun/ptc/internal/telemetry"
)

// Config configures the exporter and the sampler.
type Config struct {
	// Endpoint is host:port or an http(s) URL of the collector.
	Endpoint string
	// Protocol is "grpc" or "http".
	Protocol string
	// Insecure sends spans in plaintext.
	Insecure bool
	// Headers go with every export request.
	Headers map[string]string
	// SamplingRatio is the share of root traces recorded, 0 to 1.
	SamplingRatio float64
	// ServiceName is the service.name resource attribute.
	ServiceName string
	// RecordValues puts values into spans (see telemetry.Tracing).
	RecordValues bool
	// Log receives export failures; nil discards them.
	Log *slog.Logger
	// BatchTimeout is how long spans wait to be exported; 0 means the SDK's
	// default (5s).
	BatchTimeout time.Duration
}

// Provider is the tracing of a ptcd process.
type Provider struct {
	// Tracing is what the executor, the server and the tool sources use.
	Tracing telemetry.Tracing
	sdk     *sdktrace.TracerProvider
	exp     *loggingExporter
}

// New builds the provider. It does not contact the collector (the first
// export does); see Probe.
func New(ctx context.Context, c Config) (*Provider, error) {
	if c.SamplingRatio < 0 || c.SamplingRatio > 1 {
		return nil, fmt.Errorf("tracing: sampling ratio %g is not between 0 and 1", c.SamplingRatio)
	}
	exp, err := newExporter(ctx, c)
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", c.ServiceName)))
	if err != nil {
		res = resource.NewSchemaless(attribute.String("service.name", c.ServiceName))
	}
	var bopts []sdktrace.BatchSpanProcessorOption
	if c.BatchTimeout > 0 {
		bopts = append(bopts, sdktrace.WithBatchTimeout(c.BatchTimeout))
	}
	le := newLoggingExporter(exp, c.Log, c.Endpoint)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SamplingRatio))),
		sdktrace.WithBatcher(le, bopts...),
		sdktrace.WithResource(res),
	)
	return &Provider{sdk: tp, exp: le, Tracing: telemetry.Tracing{
		Provider:     tp,
		Propagator:   propagation.TraceContext{},
		RecordValues: c.RecordValues,
	}}, nil
}

// abortWait bounds the wait for the exporter to stop after its exports
// were aborted.
const abortWait = 5 * time.Second

// Shutdown exports the spans still queued and stops. When ctx ends first
// (a collector that does not answer), the exports in flight are aborted,
// their spans dropped, and the exporter's connection closed before it
// returns ctx's error.
func (p *Provider) Shutdown(ctx context.Context) error {
	err := p.sdk.Shutdown(ctx)
	if err == nil {
		return nil
	}
	p.exp.abort()
	t := time.NewTimer(abortWait)
	defer t.Stop()
	select {
	case <-p.exp.closed:
	case <-t.C:
	}
	return err
}

func newExporter(ctx context.Context, c Config) (sdktrace.SpanExporter, error) {
	isURL := strings.Contains(c.Endpoint, "://")
	retry := struct {
		initial, max, elapsed time.Duration
	}{time.Second, 5 * time.Second, 30 * time.Second}
	switch c.Protocol {
	case "grpc", "":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(10 * time.Second),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: retry.initial, MaxInterval: retry.max, MaxElapsedTime: retry.elapsed})}
		if isURL {
			opts = append(opts, otlptracegrpc.WithEndpointURL(c.Endpoint))
		} else {
			opts = append(opts, otlptracegrpc.WithEndpoint(c.Endpoint))
		}
		if c.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(c.Headers))
		}
		return otlptracegrpc.New(ctx, opts...)
	case "http":
		opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(10 * time.Second),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: retry.initial, MaxInterval: retry.max, MaxElapsedTime: retry.elapsed})}
		if isURL {
			opts = append(opts, otlptracehttp.WithEndpointURL(c.Endpoint))
		} else {
			opts = append(opts, otlptracehttp.WithEndpoint(c.Endpoint))
		}
		if c.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(c.Headers))
		}
		return otlptracehttp.New(ctx, opts...)
	}
	return nil, fmt.Errorf("tracing: protocol %q is unknown: use grpc or http", c.Protocol)
}

// Probe dials the collector's address once (within timeout) and reports
// why it cannot be reached; nil when it can.
func Probe(endpoint string, timeout time.Duration) error {
	addr := endpoint
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return err
		}
		addr = u.Host
		if u.Port() == "" {
			port := "80"
			if u.Scheme == "https" {
				port = "443"
			}
			addr = net.JoinHostPort(u.Hostname(), port)
		}
	}
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	return conn.Close()
}

// logAfter bounds how often export failures are logged.
const logAfter = time.Minute

// loggingExporter logs export failures instead of failing: spans that
// cannot be exported are dropped and counted.
type loggingExporter struct {
	sdktrace.SpanExporter
	log      *slog.Logger
	endpoint string
	// aborted ends every export (abort); closed is closed once the wrapped
	// exporter has shut down.
	aborted context.Context
	abort   context.CancelFunc
	closed  chan struct{}
	once    sync.Once

	mu      sync.Mutex
	logged  time.Time
	dropped int
}

func newLoggingExporter(exp sdktrace.SpanExporter, log *slog.Logger, endpoint string) *loggingExporter {
	e := &loggingExporter{SpanExporter: exp, log: log, endpoint: endpoint, closed: make(chan struct{})}
	e.aborted, e.abort = context.WithCancel(context.Background())
	return e
}

// Shutdown shuts the wrapped exporter down; when ctx has already ended
// (Provider.Shutdown aborting) it still closes its connection, bounded.
func (e *loggingExporter) Shutdown(ctx context.Context) error {
	defer e.once.Do(func() { close(e.closed) })
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		defer cancel()
	}
	return e.SpanExporter.Shutdown(ctx)
}

// ExportSpans exports spans; a failure is logged (rate-limited) and
// swallowed, so the SDK keeps going.
func (e *loggingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(e.aborted, cancel)
	defer stop()
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err == nil || e.log == nil {
		return nil
	}
	e.mu.Lock()
	e.dropped += len(spans)
	now := time.Now()
	if !e.logged.IsZero() && now.Sub(e.logged) < logAfter {
		e.mu.Unlock()
		return nil
	}
	dropped := e.dropped
	e.dropped, e.logged = 0, now
	e.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	e.log.Warn("tracing: spans could not be exported and were dropped; ptcd keeps serving", "endpoint", e.endpoint,
		"dropped_spans", dropped, "err", err)
	return nil
}
