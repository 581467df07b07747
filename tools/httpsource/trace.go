package httpsource

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcrun/ptc/tools"
)

// scopeName is the instrumentation scope of the request spans.
const scopeName = "github.com/ptcrun/ptc/tools/httpsource"

// startSpan starts the client span of one request and writes its trace
// context into the request's headers. The span holds the method, the URL
// template and the server, never the URL filled with the arguments.
func (e *endpoint) startSpan(ctx context.Context, req *http.Request) (context.Context, trace.Span) {
	ctx, span := e.tracer.Start(ctx, e.spanName, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("http.request.method", e.method),
			attribute.String("url.template", e.pathTmpl),
			attribute.String("server.address", e.host),
			attribute.Int("server.port", e.port),
			attribute.String("gen_ai.tool.name", e.tool),
		)
	}
	e.prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
	return ctx, span
}

// endSpan records how a request ended: its status code and body size, or
// the error code a script sees.
func endSpan(span trace.Span, status int, out json.RawMessage, err error) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if err == nil {
		span.SetAttributes(attribute.Int("http.response.body.size", len(out)))
		return
	}
	code := "error"
	var te *tools.Error
	if errors.As(err, &te) {
		code = te.Code
	}
	span.SetAttributes(attribute.String("error.type", code))
	span.SetStatus(codes.Error, code)
}
