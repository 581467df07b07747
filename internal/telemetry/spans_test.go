package telemetry

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
)

func attrsOf(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, a := range s.Attributes() {
		out[string(a.Key)] = a.Value.Emit()
	}
	return out
}

// TestSpansHoldValuesOnlyWhenAsked: tool-call and execution spans carry
// sizes and codes; arguments, results and error messages only with
// RecordValues, cut at MaxValueBytes. A name that is no tool does not
// become a span name.
func TestSpansHoldValuesOnlyWhenAsked(t *testing.T) {
	for _, values := range []bool{false, true} {
		rec := tracetest.NewSpanRecorder()
		tr := Tracing{Provider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), RecordValues: values}
		ctx, exec := tr.StartExecution(context.Background(), Execution{ID: "ex1", Language: core.LanguageJavaScript, Isolation: "worker"})
		obs := tr.CallSpans(func(n string) bool { return n == "ask_user" }, func(n string) (string, bool) {
			return map[string]string{"lookup": "Looks up.", "ask_user": "Asks the user."}[n], n == "lookup" || n == "ask_user"
		})
		big := json.RawMessage(`"` + strings.Repeat("v", 2*MaxValueBytes) + `"`)
		for _, ev := range []*core.CallEvent{
			{Seq: 1, Tool: "lookup", IdempotencyKey: "ex1/1", Arguments: json.RawMessage(`{"q":"secret-arg"}`)},
			{Seq: 2, Tool: "made_up_by_the_script", Arguments: json.RawMessage(`{}`)},
			{Seq: 3, Tool: "ask_user", Arguments: big},
		} {
			cctx := obs.CallStarted(ctx, ev)
			ev.Finished = true
			switch ev.Seq {
			case 1:
				ev.OK, ev.Result = true, json.RawMessage(`{"a":"secret-result"}`)
			case 2:
				ev.ErrorCode, ev.ErrorMessage = "unknown_tool", "unknown tool secret-name"
			case 3:
				ev.OK, ev.Result = true, big
			}
			obs.CallFinished(cctx, ev)
		}
		tr.EndExecution(exec, &core.Result{Error: fault.New(fault.KindScript, "uncaught secret-error")})
		spans := rec.Ended()
		if len(spans) != 4 {
			t.Fatalf("%d spans", len(spans))
		}
		names := []string{spans[0].Name(), spans[1].Name(), spans[2].Name(), spans[3].Name()}
		if strings.Join(names, ",") != "execute_tool lookup,execute_tool,execute_tool ask_user,ptc.execute" {
			t.Fatalf("names %v", names)
		}
		for _, s := range spans[:3] {
			if s.Parent().SpanID() != exec.SpanContext().SpanID() {
				t.Fatalf("%s is not a child of the execution", s.Name())
			}
		}
		a := attrsOf(spans[0])
		if a["ptc.tool.argument_bytes"] != "18" || a["ptc.tool.result_bytes"] != "21" || a["ptc.tool.outcome"] != "ok" || a["gen_ai.tool.call.id"] != "ex1/1" {
			t.Fatalf("attributes %v", a)
		}
		if a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != "lookup" || a["gen_ai.tool.type"] != "extension" || a["gen_ai.tool.description"] != "Looks up." ||
			values != (a["gen_ai.tool.call.arguments"] == `{"q":"secret-arg"}` && a["gen_ai.tool.call.result"] == `{"a":"secret-result"}`) {
			t.Fatalf("GenAI attributes %v", a)
		}
		if a := attrsOf(spans[2]); a["ptc.tool.client"] != "true" || a["gen_ai.tool.type"] != "function" || values && len(a["gen_ai.tool.call.result"]) > MaxValueBytes+len("…[truncated]") {
			t.Fatalf("client tool span %v", a)
		}
		if a := attrsOf(spans[1]); a["error.type"] != "unknown_tool" || spans[1].Status().Description != "unknown_tool" {
			t.Fatalf("failed call %v %v", a, spans[1].Status())
		}
		if a := attrsOf(spans[3]); a["ptc.outcome"] != "SCRIPT_ERROR" || a["ptc.isolation"] != "worker" || spans[3].Status().Description != "SCRIPT_ERROR" {
			t.Fatalf("execution %v", a)
		}
		all := ""
		for _, s := range spans {
			for k, v := range attrsOf(s) {
				all += k + "=" + v + "\n"
			}
		}
		if has := strings.Contains(all, "secret"); has != values {
			t.Fatalf("values=%v but secrets in spans: %v\n%s", values, has, all)
		}
	}
	// A segment that paused is not a finished execution: its span says
	// so, without an error status.
	rec := tracetest.NewSpanRecorder()
	tr := Tracing{Provider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))}
	_, exec := tr.StartExecution(context.Background(), Execution{ID: "ex2", Language: core.LanguageJavaScript})
	tr.EndExecution(exec, &core.Result{Pending: []core.Action{{CallID: "c1", Kind: core.ActionClientTool, Tool: "ask"}}})
	if s := rec.Ended()[0]; attrsOf(s)["ptc.outcome"] != OutcomeRequiresAction || s.Status().Code == codes.Error {
		t.Fatalf("paused segment: %v %v", attrsOf(s), s.Status())
	}
	// Off: no spans, no observer.
	if (Tracing{}).CallSpans(nil, nil) != nil {
		t.Fatal("observer with tracing off")
	}
	if _, span := (Tracing{}).StartExecution(context.Background(), Execution{}); span != nil {
		t.Fatal("span with tracing off")
	}
}

// TestCallTraceContext: the trace context handed to the caller serving a
// call names the call's span, and is empty when the span is not recorded
// (no tracing, or a trace not sampled). A call left waiting at a pause has
// its span ended with the outcome "paused", not as an error.
func TestCallTraceContext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler
		want    bool
	}{
		{"sampled", sdktrace.AlwaysSample(), true},
		{"not sampled", sdktrace.NeverSample(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tr := Tracing{Provider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(tc.sampler))}
			ctx, exec := tr.StartExecution(context.Background(), Execution{ID: "ex1"})
			obs := tr.CallSpans(nil, nil)
			ev := &core.CallEvent{Seq: 1, Tool: "ask_user", IdempotencyKey: "ex1/1"}
			cctx := obs.CallStarted(ctx, ev)
			tp, ts := CallTraceContext(cctx)
			if !tc.want {
				if tp != "" || ts != "" {
					t.Fatalf("trace context %q %q for a span not recorded", tp, ts)
				}
				return
			}
			span := trace.SpanFromContext(cctx).SpanContext()
			if want := "00-" + exec.SpanContext().TraceID().String() + "-" + span.SpanID().String() + "-01"; tp != want || ts != "" {
				t.Fatalf("traceparent %q tracestate %q, want %q", tp, ts, want)
			}
			obs.(core.PauseObserver).CallPaused(cctx, ev)
			ended := rec.Ended()
			if len(ended) != 1 || attrsOf(ended[0])["ptc.tool.outcome"] != OutcomePaused || ended[0].Status().Code != codes.Unset {
				t.Fatalf("paused call span %v", ended)
			}
		})
	}
	if tp, ts := CallTraceContext(context.Background()); tp != "" || ts != "" {
		t.Fatalf("trace context %q %q without a span", tp, ts)
	}
}
