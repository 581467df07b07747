package otlp

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/telemetry/otlptest"
	"github.com/ptcrun/ptc/internal/testenv"
)

// TestExportBothProtocols: spans reach a collector over OTLP/gRPC (with the
// configured headers) and over OTLP/HTTP.
func TestExportBothProtocols(t *testing.T) {
	ctx := context.Background()
	recv := otlptest.Start(t)
	var mu sync.Mutex
	var httpSpans int
	var httpKey string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		httpKey = r.Header.Get("x-api-key")
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				httpSpans += len(ss.GetSpans())
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	defer hs.Close()
	for _, c := range []Config{
		{Endpoint: recv.Addr, Protocol: "grpc", Insecure: true},
		{Endpoint: hs.URL + "/v1/traces", Protocol: "http"},
	} {
		c.SamplingRatio, c.ServiceName, c.Headers = 1, "svc", map[string]string{"x-api-key": "k1"}
		p, err := New(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		_, span := p.Tracing.Tracer().Start(ctx, "one")
		span.End()
		if err := p.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if spans := recv.Spans(); len(spans) != 1 || spans[0].Name != "one" || spans[0].Service != "svc" || recv.Headers()[0].Get("x-api-key")[0] != "k1" {
		t.Fatalf("grpc: %+v", spans)
	}
	mu.Lock()
	defer mu.Unlock()
	if httpSpans != 1 || httpKey != "k1" {
		t.Fatalf("http: %d spans, key %q", httpSpans, httpKey)
	}
}

// TestUnreachableCollector: spans for a collector that does not answer are
// dropped and logged, never returned as errors to the SDK, and shutting
// down within a short grace leaves nothing running.
func TestUnreachableCollector(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	_ = lis.Close()
	if err := Probe(dead, time.Second); err == nil {
		t.Fatal("probe of a closed port succeeded")
	}
	var logs testenv.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	p, err := New(context.Background(), Config{Endpoint: dead, Protocol: "grpc", Insecure: true, SamplingRatio: 1, ServiceName: "svc", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	// The exporter itself, as the batch processor calls it.
	exportCtx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := p.exp.ExportSpans(exportCtx, tracetest.SpanStubs{{Name: "x"}}.Snapshots()); err != nil {
		t.Fatalf("export error reached the SDK: %v", err)
	}
	_, span := p.Tracing.Tracer().Start(context.Background(), "lost")
	span.End()
	sctx, scancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer scancel()
	_ = p.Shutdown(sctx)
	if !strings.Contains(logs.String(), "spans could not be exported and were dropped") {
		t.Fatalf("logs: %s", logs.String())
	}
}

func TestNewRefusesBadRatio(t *testing.T) {
	if _, err := New(context.Background(), Config{Endpoint: "127.0.0.1:4317", SamplingRatio: 2}); err == nil {
		t.Fatal("ratio 2 accepted")
	}
}
