// Package otlptest is an OTLP/gRPC trace receiver for tests: it listens on
// loopback, keeps every span exported to it, and answers questions about
// the span tree.
package otlptest

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Span is a received span, simplified.
type Span struct {
	Name                          string
	TraceID, SpanID, ParentSpanID string // hex
	Kind                          tracepb.Span_SpanKind
	Attrs                         map[string]string
	StatusError                   bool
	StatusMessage                 string
	Service                       string
	StartUnixNano, EndUnixNano    uint64
}

// Receiver is a running OTLP trace receiver.
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	// Addr is its host:port.
	Addr string

	mu      sync.Mutex
	spans   []Span
	headers []metadata.MD
	changed chan struct{}
}

// Start starts a receiver on 127.0.0.1; it stops when the test ends.
func Start(tb testing.TB) *Receiver {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r := &Receiver{Addr: lis.Addr().String(), changed: make(chan struct{})}
	gs := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(gs, r)
	done := make(chan struct{})
	go func() { _ = gs.Serve(lis); close(done) }()
	tb.Cleanup(func() { gs.Stop(); <-done })
	return r
}

// Export receives spans.
func (r *Receiver) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headers = append(r.headers, md)
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, Span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Kind: s.GetKind(), Attrs: attrs(s.GetAttributes()),
					StatusError: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR, StatusMessage: s.GetStatus().GetMessage(),
					Service: service, StartUnixNano: s.GetStartTimeUnixNano(), EndUnixNano: s.GetEndTimeUnixNano(),
				})
			}
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = fmt.Sprint(x.DoubleValue)
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Headers returns the metadata of every export request.
func (r *Receiver) Headers() []metadata.MD {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]metadata.MD(nil), r.headers...)
}

// Wait blocks until cond holds for the spans received, or ctx ends.
func (r *Receiver) Wait(ctx context.Context, cond func([]Span) bool) ([]Span, error) {
	for {
		r.mu.Lock()
		spans := append([]Span(nil), r.spans...)
		ch := r.changed
		r.mu.Unlock()
		if cond(spans) {
			return spans, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return spans, ctx.Err()
		}
	}
}

// Tree renders the spans of one trace as an indented tree of names, children
// sorted by name (then start time), for comparing whole trees in tests.
// Spans whose parent is not in the trace are roots.
func Tree(spans []Span, traceID string) string {
	byID := map[string]bool{}
	kids := map[string][]Span{}
	for _, s := range spans {
		if s.TraceID == traceID {
			byID[s.SpanID] = true
		}
	}
	var roots []Span
	for _, s := range spans {
		if s.TraceID != traceID {
			continue
		}
		if byID[s.ParentSpanID] {
			kids[s.ParentSpanID] = append(kids[s.ParentSpanID], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(list []Span, depth int)
	walk = func(list []Span, depth int) {
		sort.Slice(list, func(i, j int) bool {
			if list[i].Name != list[j].Name {
				return list[i].Name < list[j].Name
			}
			return list[i].StartUnixNano < list[j].StartUnixNano
		})
		// Runs of same-named leaves are written once with a count.
		for i := 0; i < len(list); {
			j := i
			for j < len(list) && list[j].Name == list[i].Name && len(kids[list[j].SpanID]) == 0 && len(kids[list[i].SpanID]) == 0 {
				j++
			}
			if j-i > 1 {
				fmt.Fprintf(&b, "%s%s ×%d\n", strings.Repeat("  ", depth), list[i].Name, j-i)
				i = j
				continue
			}
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), list[i].Name)
			walk(kids[list[i].SpanID], depth+1)
			i++
		}
	}
	walk(roots, 0)
	return b.String()
}
