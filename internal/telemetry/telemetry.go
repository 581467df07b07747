// Package telemetry holds ptc's OpenTelemetry tracing on the API side: the
// span names and attribute keys, the execution span, and the CallObserver
// that makes one span per tool call. It uses only the OpenTelemetry API
// (go.opentelemetry.io/otel/trace and friends); the SDK and the OTLP
// exporter are set up by internal/telemetry/otlp for ptcd. Without a
// provider every function here does nothing.
//
// Spans carry sizes, kinds, codes and ids. Argument, result, error-message
// and log values go into spans only when Tracing.RecordValues is set (an
// operator's choice: those values are the callers' data).
package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of ptc's spans.
const ScopeName = "github.com/ptcrun/ptc"

// Span names.
const (
	// SpanExecution is the span of one execution (prepare excluded, the
	// engine and every tool call included).
	SpanExecution = "ptc.execute"
	// SpanToolPrefix starts the name of a tool call's span:
	// "execute_tool get_expenses" (the OpenTelemetry GenAI convention).
	SpanToolPrefix = "execute_tool"
	// SpanAdmission is the span of the wait for an admission slot.
	SpanAdmission = "ptc.admission"
)

// Attribute keys.
const (
	KeyExecutionID     = attribute.Key("ptc.execution.id")
	KeyLanguage        = attribute.Key("ptc.language")
	KeyIsolation       = attribute.Key("ptc.isolation")
	KeyTenant          = attribute.Key("ptc.tenant")
	KeySourceBytes     = attribute.Key("ptc.source_bytes")
	KeyInputBytes      = attribute.Key("ptc.input_bytes")
	KeyTools           = attribute.Key("ptc.tools")
	KeyOutcome         = attribute.Key("ptc.outcome")
	KeyErrorLine       = attribute.Key("ptc.error.line")
	KeyErrorTool       = attribute.Key("ptc.error.tool")
	KeyErrorLimit      = attribute.Key("ptc.error.limit")
	KeyErrorObserved   = attribute.Key("ptc.error.observed")
	KeyErrorMessage    = attribute.Key("ptc.error.message")
	KeyCPUTimeMS       = attribute.Key("ptc.cpu_time_ms")
	KeyQueueTimeMS     = attribute.Key("ptc.queue_time_ms")
	KeyPeakMemoryBytes = attribute.Key("ptc.peak_memory_bytes")
	KeyToolCalls       = attribute.Key("ptc.tool_calls")
	KeyToolResultBytes = attribute.Key("ptc.tool_result_bytes")
	KeyOutputBytes     = attribute.Key("ptc.output_bytes")
	KeyLogBytes        = attribute.Key("ptc.log_bytes")
	KeyLogsTruncated   = attribute.Key("ptc.logs_truncated")
	KeyTruncated       = attribute.Key("ptc.result.truncated")
	KeyUntruncated     = attribute.Key("ptc.result.untruncated_bytes")
	KeyResult          = attribute.Key("ptc.result")
	KeyTimeoutMS       = attribute.Key("ptc.limit.timeout_ms")
	KeyResumed         = attribute.Key("ptc.resumed")
	KeyAdmissionWaitMS = attribute.Key("ptc.admission.wait_ms")

	// The GenAI semantic conventions' (SemconvVersion); arguments and
	// results only with RecordValues.
	KeyGenAIOperation       = semconv.GenAIOperationNameKey
	KeyGenAITool            = semconv.GenAIToolNameKey
	KeyGenAIToolType        = semconv.GenAIToolTypeKey
	KeyGenAIToolDescription = semconv.GenAIToolDescriptionKey
	KeyGenAICallID          = semconv.GenAIToolCallIDKey
	KeyArguments            = semconv.GenAIToolCallArgumentsKey
	KeyToolResult           = semconv.GenAIToolCallResultKey
	KeyErrorType            = semconv.ErrorTypeKey

	KeyToolSeq       = attribute.Key("ptc.tool.seq")
	KeyToolClient    = attribute.Key("ptc.tool.client")
	KeyArgumentBytes = attribute.Key("ptc.tool.argument_bytes")
	KeyResultBytes   = attribute.Key("ptc.tool.result_bytes")
	KeyToolOutcome   = attribute.Key("ptc.tool.outcome")
	KeyToolError     = attribute.Key("ptc.tool.error_message")
)

// The gen_ai.tool.type of a tool call: a client tool is executed by the
// caller ("function"), a server tool by ptc on the caller's behalf
// ("extension").
const (
	ToolTypeFunction  = "function"
	ToolTypeExtension = "extension"
)

// OutcomePaused is the ptc.tool.outcome of a call span that ended at a
// pause, its call waiting for the caller.
const OutcomePaused = "paused"

// MaxValueBytes bounds one value recorded in a span (RecordValues); longer
// values are cut and marked.
const MaxValueBytes = 4 << 10

// Tracing is what instrumented code needs. The zero value traces nothing.
type Tracing struct {
	// Provider makes the tracers; nil turns tracing off.
	Provider trace.TracerProvider
	// Propagator injects trace context into outgoing requests (W3C trace
	// context); nil means none.
	Propagator propagation.TextMapPropagator
	// RecordValues puts argument, result and error-message values into
	// spans (bounded by MaxValueBytes).
	RecordValues bool
}

// Enabled reports whether spans are made.
func (t Tracing) Enabled() bool { return t.Provider != nil }

// Tracer returns the tracer of ptc's spans.
func (t Tracing) Tracer() trace.Tracer {
	if t.Provider == nil {
		return nil
	}
	return t.Provider.Tracer(ScopeName)
}

// value returns s bounded for a span attribute.
func value(s []byte) string {
	if len(s) <= MaxValueBytes {
		return string(s)
	}
	cut := MaxValueBytes
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return string(s[:cut]) + "…[truncated]"
}
