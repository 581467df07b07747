package httpsource

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcrun/ptc/tools"
)

// scopeName is the instrumentation scope of the request spans.
const scopeName = "github.com/ptcrun/ptc/tools/httpsource"

// errorTypeOther is the error.type of a failure that is neither an HTTP
// error status nor a *tools.Error (the conventions' fallback value).
const errorTypeOther = "_OTHER"

// startSpan starts the client span of one request and writes its trace
// context into the request's headers. The span holds the method, the URL
// template and the server (keys of semantic conventions 1.41.0, as
// internal/telemetry), never the URL filled with the arguments.
func (e *endpoint) startSpan(ctx context.Context, req *http.Request) (context.Context, trace.Span) {
	ctx, span := e.tracer.Start(ctx, e.spanName, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(
			semconv.HTTPRequestMethodKey.String(e.method),
			semconv.URLTemplate(e.pathTmpl),
			semconv.ServerAddress(e.host),
			semconv.ServerPort(e.port),
			semconv.GenAIToolName(e.tool),
		)
	}
	e.prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
	return ctx, span
}

// endSpan records how a request ended: its status code and body size, or
// its error. error.type is the status code of an error status (4xx, 5xx),
// as the HTTP conventions say; for a request that failed otherwise (no
// answer, a body over the cap) it is the error code a script sees.
func endSpan(span trace.Span, status int, out json.RawMessage, err error) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	if status != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	}
	if err == nil {
		span.SetAttributes(semconv.HTTPResponseBodySize(len(out)))
		return
	}
	code := errorTypeOther
	var te *tools.Error
	switch {
	case status >= 400:
		code = strconv.Itoa(status)
	case errors.As(err, &te):
		code = te.Code
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(code))
	span.SetStatus(codes.Error, code)
}
