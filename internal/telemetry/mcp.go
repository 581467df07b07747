package telemetry

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// SemconvVersion is the version of the OpenTelemetry semantic conventions
// ptc's MCP and GenAI attributes follow: the newest the pinned
// go.opentelemetry.io/otel module provides with the MCP and GenAI
// attributes (its later packages leave those out).
const SemconvVersion = "1.41.0"

// MCP span attribute keys (semantic conventions SemconvVersion).
const (
	KeyMCPMethod          = semconv.McpMethodNameKey
	KeyMCPSessionID       = semconv.McpSessionIDKey
	KeyMCPProtocolVersion = semconv.McpProtocolVersionKey
	KeyJSONRPCRequestID   = semconv.JSONRPCRequestIDKey
	KeyRPCStatusCode      = semconv.RPCResponseStatusCodeKey
	KeyNetworkTransport   = semconv.NetworkTransportKey
)

// ErrorTypeToolError is the error.type of a tools/call whose result is
// isError (the MCP conventions' value).
const ErrorTypeToolError = "tool_error"

// MCPRequest describes a JSON-RPC request an MCP server received, as its
// span starts.
type MCPRequest struct {
	// Method is the JSON-RPC method (tools/call).
	Method string
	// Target is what the method acts on: the tool of a tools/call; "" for
	// none. It names the span: the caller keeps it to a bounded set (a
	// tool it serves).
	Target string
	// RequestID is the request's JSON-RPC id as a string; "" for none.
	RequestID string
	// SessionID is the MCP session's id; "" for none (stdio).
	SessionID string
	// ProtocolVersion is the MCP protocol revision the session speaks.
	ProtocolVersion string
	// Transport is the network transport: "tcp" (streamable HTTP) or
	// "pipe" (stdio).
	Transport string
	// Meta is the request's params._meta, where the MCP conventions carry
	// the caller's trace context (traceparent, tracestate).
	Meta map[string]any
	// Header is the HTTP request's header (traceparent); nil over stdio.
	Header http.Header
}

// StartMCPServer starts the SERVER span of one MCP request, named
// "{method} {target}" ("tools/call execute"). Its parent is the caller's
// trace context from params._meta when there is one, else from the HTTP
// headers (linked when both are there and differ), else none. The
// returned context carries the span to the request's handler (for an
// execute, the admission wait, the execution and its tool calls). With
// tracing off it returns ctx and a nil span.
func (t Tracing) StartMCPServer(ctx context.Context, r MCPRequest) (context.Context, trace.Span) {
	if t.Provider == nil {
		return ctx, nil
	}
	prop := t.Propagator
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	var opts []trace.SpanStartOption
	parent := ctx
	var fromHeader trace.SpanContext
	if r.Header != nil {
		fromHeader = trace.SpanContextFromContext(prop.Extract(context.Background(), propagation.HeaderCarrier(r.Header)))
	}
	fromMeta := trace.SpanContextFromContext(prop.Extract(context.Background(), metaCarrier(r.Meta)))
	switch {
	case fromMeta.IsValid():
		parent = trace.ContextWithRemoteSpanContext(ctx, fromMeta)
		if fromHeader.IsValid() && !fromHeader.Equal(fromMeta) {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: fromHeader}))
		}
	case fromHeader.IsValid():
		parent = trace.ContextWithRemoteSpanContext(ctx, fromHeader)
	}
	r.Method, r.Target, r.RequestID, r.ProtocolVersion = short(r.Method), short(r.Target), short(r.RequestID), short(r.ProtocolVersion)
	name := r.Method
	if r.Target != "" {
		name += " " + r.Target
	}
	opts = append(opts, trace.WithSpanKind(trace.SpanKindServer))
	ctx, span := t.Tracer().Start(parent, name, opts...)
	if span.IsRecording() {
		attrs := []attribute.KeyValue{KeyMCPMethod.String(r.Method)}
		if r.Method == "tools/call" {
			attrs = append(attrs, semconv.GenAIOperationNameExecuteTool, KeyGenAITool.String(r.Target))
		}
		if r.RequestID != "" {
			attrs = append(attrs, KeyJSONRPCRequestID.String(r.RequestID))
		}
		if r.SessionID != "" {
			attrs = append(attrs, KeyMCPSessionID.String(r.SessionID))
		}
		if r.ProtocolVersion != "" {
			attrs = append(attrs, KeyMCPProtocolVersion.String(r.ProtocolVersion))
		}
		if r.Transport != "" {
			attrs = append(attrs, KeyNetworkTransport.String(r.Transport))
		}
		span.SetAttributes(attrs...)
	}
	return ctx, span
}

// EndMCPServer ends the span of an MCP request. rpcCode is the JSON-RPC
// error code of a request that failed (0 for none); toolError marks a
// tools/call whose result is isError. A nil span is ignored.
func (t Tracing) EndMCPServer(span trace.Span, rpcCode int64, toolError bool) {
	if span == nil {
		return
	}
	defer span.End()
	if !span.IsRecording() {
		return
	}
	switch {
	case rpcCode != 0:
		code := strconv.FormatInt(rpcCode, 10)
		span.SetAttributes(KeyErrorType.String(code), KeyRPCStatusCode.String(code))
		span.SetStatus(codes.Error, code)
	case toolError:
		span.SetAttributes(KeyErrorType.String(ErrorTypeToolError))
		span.SetStatus(codes.Error, ErrorTypeToolError)
	}
}

// maxIDBytes bounds the values a caller chooses (a request id, a method
// name) in a span.
const maxIDBytes = 128

// short bounds s to maxIDBytes, on a rune boundary.
func short(s string) string {
	if len(s) <= maxIDBytes {
		return s
	}
	return cutRunes(s, maxIDBytes)
}

// cutRunes shortens s to at most n bytes on a rune boundary.
func cutRunes(s string, n int) string {
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// metaCarrier reads trace context from an MCP params._meta.
type metaCarrier map[string]any

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
