package mcp

import (
	"context"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// scopeName is the instrumentation scope of the tools/call spans.
const scopeName = "github.com/ptcrun/ptc/tools/mcp"

// metaCarrier writes trace context into a request's _meta.
type metaCarrier sdk.Meta

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// startSpan starts the client span of one tools/call and writes its trace
// context into meta. The span holds the method, the tool and the source,
// never the arguments.
func (s *Source) startSpan(ctx context.Context, name, full string, meta sdk.Meta) (context.Context, trace.Span) {
	ctx, span := s.tracer.Start(ctx, "tools/call "+name, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("mcp.method.name", "tools/call"),
			attribute.String("gen_ai.tool.name", name),
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("ptc.tool", full),
			attribute.String("ptc.tool_source", s.cfg.Name),
		)
	}
	s.cfg.Propagator.Inject(ctx, metaCarrier(meta))
	return ctx, span
}

// endSpan records how a call ended: a result, a result with isError, or a
// failure.
func endSpan(span trace.Span, res *sdk.CallToolResult, err error) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	switch {
	case err != nil:
		span.SetAttributes(attribute.String("error.type", "mcp_error"))
		span.SetStatus(codes.Error, "mcp_error")
	case res != nil && res.IsError:
		span.SetAttributes(attribute.String("error.type", CodeToolError))
		span.SetStatus(codes.Error, CodeToolError)
	}
}

// traceTransport wraps an HTTP transport so that the requests of a traced
// call (those whose context holds a span) get a client span and carry the
// trace context in their headers; the session's own requests (connecting,
// listing tools, its event stream) stay untraced.
func (s *Source) traceTransport(base http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(base,
		otelhttp.WithTracerProvider(s.cfg.TracerProvider),
		otelhttp.WithPropagators(s.cfg.Propagator),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithFilter(func(r *http.Request) bool { return trace.SpanContextFromContext(r.Context()).IsValid() }),
	)
}

var _ propagation.TextMapCarrier = metaCarrier(nil)
