package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcrun/ptc/internal/core"
)

// Execution describes an execution as its span starts.
type Execution struct {
	ID          string
	Language    core.Language
	Isolation   string
	SourceBytes int
	InputBytes  int
	Tools       int
	Timeout     int64 // milliseconds
	// Resumed: the span is a resumed segment of a resumable execution.
	Resumed bool
}

// StartExecution starts the span of an execution; the returned context
// carries it to the engine and, through the bridge, to every tool call.
// With tracing off it returns ctx and a nil span.
func (t Tracing) StartExecution(ctx context.Context, e Execution) (context.Context, trace.Span) {
	if t.Provider == nil {
		return ctx, nil
	}
	ctx, span := t.Tracer().Start(ctx, SpanExecution, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(
			KeyExecutionID.String(e.ID),
			KeyLanguage.String(e.Language.String()),
			KeyIsolation.String(e.Isolation),
			KeySourceBytes.Int(e.SourceBytes),
			KeyInputBytes.Int(e.InputBytes),
			KeyTools.Int(e.Tools),
			KeyTimeoutMS.Int64(e.Timeout),
		)
		if e.Resumed {
			span.SetAttributes(KeyResumed.Bool(true))
		}
	}
	return ctx, span
}

// EndExecution records a finished execution's outcome and stats in its span
// and ends it. A nil span is ignored.
func (t Tracing) EndExecution(span trace.Span, res *core.Result) {
	if span == nil {
		return
	}
	defer span.End()
	if !span.IsRecording() {
		return
	}
	st := res.Stats
	attrs := []attribute.KeyValue{
		KeyOutcome.String(Outcome(res)),
		KeyCPUTimeMS.Float64(float64(st.CPUTime.Microseconds()) / 1000),
		KeyQueueTimeMS.Float64(float64(st.QueueTime.Microseconds()) / 1000),
		KeyPeakMemoryBytes.Int64(st.PeakMemoryBytes),
		KeyToolCalls.Int(int(st.ToolCalls)),
		KeyToolResultBytes.Int64(st.ToolResultBytes),
		KeyOutputBytes.Int64(st.OutputBytes),
		KeyLogBytes.Int64(st.LogBytes),
	}
	if res.LogsTruncated {
		attrs = append(attrs, KeyLogsTruncated.Bool(true))
	}
	if st.ResultTruncated {
		attrs = append(attrs, KeyTruncated.Bool(true), KeyUntruncated.Int64(st.UntruncatedOutputBytes))
	}
	if e := res.Error; e != nil {
		attrs = append(attrs, KeyErrorType.String(e.Kind.String()))
		if e.Line > 0 {
			attrs = append(attrs, KeyErrorLine.Int(e.Line))
		}
		if e.Tool != "" {
			attrs = append(attrs, KeyErrorTool.String(e.Tool))
		}
		if e.Kind.IsBreach() {
			attrs = append(attrs, KeyErrorLimit.Int64(e.Limit), KeyErrorObserved.Int64(e.Observed))
		}
		if t.RecordValues {
			attrs = append(attrs, KeyErrorMessage.String(value([]byte(e.Message))))
		}
		span.SetStatus(codes.Error, e.Kind.String())
	} else if t.RecordValues {
		attrs = append(attrs, KeyResult.String(value(res.Result)))
	}
	span.SetAttributes(attrs...)
}

// OutcomeRequiresAction is the outcome of a segment of a resumable
// execution that paused for its caller: the execution is not finished.
const OutcomeRequiresAction = "REQUIRES_ACTION"

// Outcome is "ok", the error kind of a result, or OutcomeRequiresAction for a
// segment that paused, as metrics label it.
func Outcome(res *core.Result) string {
	switch {
	case res.Error != nil:
		return res.Error.Kind.String()
	case len(res.Pending) > 0:
		return OutcomeRequiresAction
	}
	return "ok"
}

// CallSpans returns the CallObserver that makes a span per tool call, as a
// child of the span in the call's context (the execution's), with the
// GenAI semantic conventions' execute_tool attributes. isClient tells
// client tools (served by the caller: gen_ai.tool.type "function") from
// server tools ("extension"); describe returns a tool's description and
// whether the name is a tool at all, telling names that are tools from
// names a script made up (whose spans are named without the tool, keeping
// span names bounded). With tracing off it returns nil.
func (t Tracing) CallSpans(isClient func(name string) bool, describe func(name string) (string, bool)) core.CallObserver {
	if t.Provider == nil {
		return nil
	}
	return &callSpans{tracer: t.Tracer(), values: t.RecordValues, isClient: isClient, describe: describe}
}

type callSpans struct {
	tracer   trace.Tracer
	values   bool
	isClient func(string) bool
	describe func(string) (string, bool)
}

// maxDescriptionBytes bounds a tool's description in its call's span.
const maxDescriptionBytes = 512

func (c *callSpans) CallStarted(ctx context.Context, ev *core.CallEvent) context.Context {
	name := SpanToolPrefix
	desc, known := "", true
	if c.describe != nil {
		desc, known = c.describe(ev.Tool)
	}
	if known {
		name += " " + ev.Tool
	}
	ctx, span := c.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		toolType := ToolTypeExtension
		if c.isClient != nil && c.isClient(ev.Tool) {
			toolType = ToolTypeFunction
		}
		attrs := []attribute.KeyValue{
			semconv.GenAIOperationNameExecuteTool,
			KeyGenAITool.String(ev.Tool),
			KeyGenAIToolType.String(toolType),
			KeyGenAICallID.String(ev.IdempotencyKey),
			KeyToolSeq.Int(int(ev.Seq)),
			KeyArgumentBytes.Int(len(ev.Arguments)),
		}
		if len(desc) > maxDescriptionBytes {
			desc = cutRunes(desc, maxDescriptionBytes)
		}
		if desc != "" {
			attrs = append(attrs, KeyGenAIToolDescription.String(desc))
		}
		if toolType == ToolTypeFunction {
			attrs = append(attrs, KeyToolClient.Bool(true))
		}
		if c.values {
			attrs = append(attrs, KeyArguments.String(value(ev.Arguments)))
		}
		span.SetAttributes(attrs...)
	}
	return ctx
}

// CallPaused ends the span of a call that waits for its caller when the
// run of a resumable execution stops at a pause: its outcome is "paused"
// (the resume that answers it records it in a new span).
func (c *callSpans) CallPaused(ctx context.Context, _ *core.CallEvent) {
	span := trace.SpanFromContext(ctx)
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(KeyToolOutcome.String(OutcomePaused))
	}
}

// CallTraceContext returns the W3C trace context (the traceparent and
// tracestate values) of the span in ctx — a tool call's, in the context
// its CallStarted returned — for the caller that serves the call. Both are
// empty when that span is not recorded (tracing is off, or the trace is
// not sampled): the caller then has no span to attach its work to.
func CallTraceContext(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return "", ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier.Get("traceparent"), carrier.Get("tracestate")
}

func (c *callSpans) CallFinished(ctx context.Context, ev *core.CallEvent) {
	span := trace.SpanFromContext(ctx)
	defer span.End()
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{KeyToolOutcome.String(ev.Outcome())}
	if ev.OK {
		attrs = append(attrs, KeyResultBytes.Int(len(ev.Result)))
		if c.values {
			attrs = append(attrs, KeyToolResult.String(value(ev.Result)))
		}
	} else {
		attrs = append(attrs, KeyErrorType.String(ev.ErrorCode))
		if c.values {
			attrs = append(attrs, KeyToolError.String(value([]byte(ev.ErrorMessage))))
		}
		span.SetStatus(codes.Error, ev.ErrorCode)
	}
	span.SetAttributes(attrs...)
}
