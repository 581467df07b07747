package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// scopeName is the instrumentation scope of the tools/call spans.
const scopeName = "github.com/ptcrun/ptc/tools/mcp"

// Attribute keys of the tools/call spans beyond the semantic conventions'
// (semconv 1.41.0, the version internal/telemetry follows).
const (
	keyTool       = attribute.Key("ptc.tool")
	keyToolSource = attribute.Key("ptc.tool_source")
)

// Values of error.type for failures without a JSON-RPC error code.
const (
	errorTypeCanceled = "canceled"
	errorTypeDeadline = "deadline_exceeded"
)

// maxIDBytes bounds a request id, chosen by the SDK, in a span.
const maxIDBytes = 128

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

// callSpanKey marks the context of a tools/call with its span, so that the
// layer writing the request (requestIDConn, requestIDTransport) can record
// the JSON-RPC id the SDK gave it.
type callSpanKey struct{}

// startSpan starts the client span of one tools/call on sess and writes
// its trace context into meta. The span holds the MCP attributes of the
// semantic conventions (method, session, protocol version, transport; the
// request id once the request is written), the tool and the source, never
// the arguments.
func (s *Source) startSpan(ctx context.Context, sess *sdk.ClientSession, name, full string, meta sdk.Meta) (context.Context, trace.Span) {
	ctx, span := s.tracer.Start(ctx, "tools/call "+name, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		attrs := []attribute.KeyValue{
			semconv.McpMethodNameToolsCall,
			semconv.GenAIToolName(name),
			semconv.GenAIOperationNameExecuteTool,
			keyTool.String(full),
			keyToolSource.String(s.cfg.Name),
			semconv.NetworkTransportPipe,
		}
		if s.cfg.URL != "" {
			attrs[len(attrs)-1] = semconv.NetworkTransportTCP
		}
		if id := sess.ID(); id != "" {
			attrs = append(attrs, semconv.McpSessionID(id))
		}
		if ir := sess.InitializeResult(); ir != nil && ir.ProtocolVersion != "" {
			attrs = append(attrs, semconv.McpProtocolVersion(ir.ProtocolVersion))
		}
		span.SetAttributes(attrs...)
		ctx = context.WithValue(ctx, callSpanKey{}, span)
	}
	s.cfg.Propagator.Inject(ctx, metaCarrier(meta))
	return ctx, span
}

// endSpan records how a call ended: a result, a result with isError
// (error.type tool_error), a JSON-RPC error from the server (error.type
// and rpc.response.status_code its code), the call's context ending, or a
// broken connection (error.type unavailable).
func endSpan(ctx context.Context, span trace.Span, res *sdk.CallToolResult, err error) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	var errType string
	var we *sdkWireError
	switch {
	case err == nil && res != nil && res.IsError:
		errType = CodeToolError
	case err == nil:
		return
	case errors.As(err, &we) && !isLocalWireCode(we.Code):
		errType = strconv.FormatInt(we.Code, 10)
		span.SetAttributes(semconv.RPCResponseStatusCodeKey.String(errType))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		errType = errorTypeDeadline
	case ctx.Err() != nil:
		errType = errorTypeCanceled
	default:
		errType = CodeUnavailable
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(errType))
	span.SetStatus(codes.Error, errType)
}

// noteRequestID records the JSON-RPC id of the tools/call request written
// in ctx on the call's span.
func noteRequestID(ctx context.Context, id string) {
	span, ok := ctx.Value(callSpanKey{}).(trace.Span)
	if !ok || id == "" {
		return
	}
	if len(id) > maxIDBytes {
		id = id[:maxIDBytes]
	}
	span.SetAttributes(semconv.JSONRPCRequestID(id))
}

// requestIDTransport wraps a transport whose connections carry JSON-RPC
// messages as values (stdio, in-memory pipes) so that a tools/call's span
// gets the id of its request.
type requestIDTransport struct{ sdk.Transport }

func (t requestIDTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return requestIDConn{c}, nil
}

type requestIDConn struct{ sdk.Connection }

func (c requestIDConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.ID.IsValid() {
		noteRequestID(ctx, fmt.Sprint(req.ID.Raw()))
	}
	return c.Connection.Write(ctx, msg)
}

// requestIDRoundTripper reads the JSON-RPC id of a tools/call posted over
// streamable HTTP (whose connection is the SDK's own and cannot be
// wrapped) from the request body, for the call's span. It reads only the
// members before "params": the SDK writes the id and method first.
type requestIDRoundTripper struct{ base http.RoundTripper }

func (t requestIDRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, ok := r.Context().Value(callSpanKey{}).(trace.Span); ok && r.Method == http.MethodPost && r.GetBody != nil {
		if body, err := r.GetBody(); err == nil {
			if id, method := peekRequest(body); method == "tools/call" {
				noteRequestID(r.Context(), id)
			}
			_ = body.Close()
		}
	}
	return t.base.RoundTrip(r)
}

// peekRequest returns the id and method of the JSON-RPC request in body,
// read up to its params; "" for what it does not find there.
func peekRequest(body io.Reader) (id, method string) {
	dec := json.NewDecoder(io.LimitReader(body, 4096))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil || key == "params" {
			return id, method
		}
		val, err := dec.Token()
		if err != nil {
			return id, method
		}
		switch v := val.(type) {
		case json.Delim: // an object or array before params: not the SDK's shape
			return id, method
		case string:
			switch key {
			case "id":
				id = v
			case "method":
				method = v
			}
		case json.Number:
			if key == "id" {
				id = v.String()
			}
		}
	}
	return id, method
}

// traceTransport wraps an HTTP transport so that the requests of a traced
// call (those whose context holds a span) get a client span and carry the
// trace context in their headers; the session's own requests (connecting,
// listing tools, its event stream) stay untraced.
func (s *Source) traceTransport(base http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(requestIDRoundTripper{base: base},
		otelhttp.WithTracerProvider(s.cfg.TracerProvider),
		otelhttp.WithPropagators(s.cfg.Propagator),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithFilter(func(r *http.Request) bool { return trace.SpanContextFromContext(r.Context()).IsValid() }),
	)
}

var _ propagation.TextMapCarrier = metaCarrier(nil)
