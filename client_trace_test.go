package ptc

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestWithTraceContext: a client tool handler's context carries the
// server's trace context of the call as its remote parent; none (or one
// that is not W3C trace context) leaves the context as it was.
func TestWithTraceContext(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		name, traceparent, tracestate string
		wantSpan, wantState           string
	}{
		{"traced", tp, "vendor=x", "b7ad6b7169203331", "vendor=x"},
		{"no state", tp, "", "b7ad6b7169203331", ""},
		{"none", "", "vendor=x", "", ""},
		{"malformed", "00-zz-b7ad6b7169203331-01", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := trace.SpanContextFromContext(withTraceContext(context.Background(), tc.traceparent, tc.tracestate))
			if tc.wantSpan == "" {
				if sc.IsValid() {
					t.Fatalf("span context %v", sc)
				}
				return
			}
			if !sc.IsRemote() || !sc.IsSampled() || sc.SpanID().String() != tc.wantSpan ||
				sc.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || sc.TraceState().String() != tc.wantState {
				t.Fatalf("span context %+v", sc)
			}
		})
	}
}
