package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/tools"
)

// spanOf finds the ended span a W3C traceparent names.
func spanOf(rec *tracetest.SpanRecorder, traceparent string) sdktrace.ReadOnlySpan {
	for _, s := range rec.Ended() {
		sc := s.SpanContext()
		if traceparent == fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()) {
			return s
		}
	}
	return nil
}

func outcomeOf(s sdktrace.ReadOnlySpan) string {
	for _, a := range s.Attributes() {
		if a.Key == telemetry.KeyToolOutcome {
			return a.Value.Emit()
		}
	}
	return ""
}

// TestPendingCallTraceContext: a call a resumable execution waits for
// carries the trace context of its execute_tool span. A run that stops at
// the pause ends that span ("paused"); a parked execution keeps it open
// and ends it with the call's answer.
func TestPendingCallTraceContext(t *testing.T) {
	for _, parked := range []int{-1, 0} {
		t.Run(fmt.Sprintf("parked=%d", parked), func(t *testing.T) {
			m, err := durable.New(durable.Config{Keys: []durable.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}})
			if err != nil {
				t.Fatal(err)
			}
			rec := tracetest.NewSpanRecorder()
			e := newExecutor(t, Config{Durable: m, Parked: ParkedConfig{Max: parked},
				Tracing: telemetry.Tracing{Provider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))}})
			req := core.Request{Script: core.Script{Source: `return await tools.ask({q: "x"})`}, Resumable: true,
				ClientTools: []tools.Tool{{Definition: tools.Definition{Name: "ask"}}}}
			res, ferr := e.Execute(context.Background(), req, limits.Limits{})
			if ferr != nil || len(res.Pending) != 1 {
				t.Fatal(ferr, res)
			}
			a := res.Pending[0]
			if !strings.HasPrefix(a.Traceparent, "00-") || a.Tracestate != "" {
				t.Fatalf("pending action trace context %q %q", a.Traceparent, a.Tracestate)
			}
			paused := spanOf(rec, a.Traceparent)
			if parked < 0 && (paused == nil || outcomeOf(paused) != telemetry.OutcomePaused) {
				t.Fatalf("the stopped run's call span %v", paused)
			}
			if parked >= 0 && paused != nil {
				t.Fatalf("the parked call's span ended at the pause: %v", paused.Attributes())
			}
			p, ferr := e.PrepareResume(context.Background(), Resume{Continuation: res.Continuation,
				Answers: []core.Answer{{CallID: a.CallID, Output: json.RawMessage(`"yes"`)}}})
			if ferr != nil {
				t.Fatal(ferr)
			}
			res2, ferr := e.Continue(context.Background(), p)
			if ferr != nil || res2.Error != nil || string(res2.Result) != `"yes"` {
				t.Fatal(ferr, res2)
			}
			if parked >= 0 {
				if s := spanOf(rec, a.Traceparent); s == nil || outcomeOf(s) != "ok" {
					t.Fatalf("the parked call's span after its answer: %v", s)
				}
			}
		})
	}
}

// TestApprovalTraceContext: an approval request carries the trace context
// of the call's span, and none with tracing off.
func TestApprovalTraceContext(t *testing.T) {
	for _, traced := range []bool{true, false} {
		t.Run(fmt.Sprintf("traced=%v", traced), func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			reg := tools.NewRegistry()
			if err := reg.Register(tools.Tool{Definition: tools.Definition{Name: "pay", RequiresApproval: true},
				Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`1`), nil }}); err != nil {
				t.Fatal(err)
			}
			cfg := Config{Registry: reg}
			if traced {
				cfg.Tracing = telemetry.Tracing{Provider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))}
			}
			e := newExecutor(t, cfg)
			var asked core.Action
			req := core.Request{Script: core.Script{Source: `return await tools.pay({})`},
				Approve: func(_ context.Context, a core.Action) (bool, string) { asked = a; return true, "" }}
			res, ferr := e.Execute(context.Background(), req, limits.Limits{})
			if ferr != nil || res.Error != nil {
				t.Fatal(ferr, res)
			}
			if !traced {
				if asked.Traceparent != "" || asked.Tracestate != "" {
					t.Fatalf("trace context %q %q with tracing off", asked.Traceparent, asked.Tracestate)
				}
				return
			}
			s := spanOf(rec, asked.Traceparent)
			if s == nil || s.Name() != "execute_tool pay" || outcomeOf(s) != "ok" {
				t.Fatalf("approval request traceparent %q names %v", asked.Traceparent, s)
			}
		})
	}
}

// TestResumedSegmentSpan: every segment of a resumable execution has its
// own ptc.execute span, the resumed ones marked ptc.resumed, with the
// segment's outcome; a server tool called in a resumed segment is a child
// of that segment's span (parked in memory or re-run alike), in the trace
// of the call that resumed it.
func TestResumedSegmentSpan(t *testing.T) {
	for _, parked := range []int{-1, 0} {
		t.Run(fmt.Sprintf("parked=%d", parked), func(t *testing.T) {
			m, err := durable.New(durable.Config{Keys: testKeys})
			if err != nil {
				t.Fatal(err)
			}
			reg := tools.NewRegistry()
			if err := reg.Register(tools.Tool{Definition: tools.Definition{Name: "lookup"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
				return json.RawMessage(`7`), nil
			}}); err != nil {
				t.Fatal(err)
			}
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			e := newExecutor(t, Config{Registry: reg, Durable: m, Parked: ParkedConfig{Max: parked}, Tracing: telemetry.Tracing{Provider: tp}})
			res := run(t, e, core.Request{Script: core.Script{Source: `const a = await tools.ask({}); return a + await tools.lookup({})`},
				Resumable: true, ClientTools: []tools.Tool{askTool}})
			if len(res.Pending) != 1 {
				t.Fatalf("not paused: %+v", res)
			}
			rctx, rpc := tp.Tracer("test").Start(context.Background(), "Resume")
			p, ferr := e.PrepareResume(rctx, Resume{Continuation: res.Continuation, Answers: []core.Answer{{CallID: res.Pending[0].CallID, Output: json.RawMessage(`1`)}}})
			if ferr != nil {
				t.Fatal(ferr)
			}
			out, ferr := e.Continue(rctx, p)
			rpc.End()
			if ferr != nil || out.Error != nil || string(out.Result) != "8" {
				t.Fatal(ferr, out)
			}
			var segments []sdktrace.ReadOnlySpan
			var lookup sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				switch s.Name() {
				case telemetry.SpanExecution:
					segments = append(segments, s)
				case "execute_tool lookup":
					lookup = s
				}
			}
			if len(segments) != 2 || lookup == nil {
				t.Fatalf("%d execution spans, lookup span %v", len(segments), lookup != nil)
			}
			first, second := attrsOf(segments[0]), attrsOf(segments[1])
			if first["ptc.outcome"] != telemetry.OutcomeRequiresAction || first["ptc.resumed"] != "" ||
				second["ptc.outcome"] != "ok" || second["ptc.resumed"] != "true" {
				t.Fatalf("segments %v / %v", first, second)
			}
			if segments[1].Parent().SpanID() != rpc.SpanContext().SpanID() || lookup.Parent().SpanID() != segments[1].SpanContext().SpanID() {
				t.Fatal("the resumed segment is not under the Resume call, or its tool call not under it")
			}
		})
	}
}

func attrsOf(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, a := range s.Attributes() {
		out[string(a.Key)] = a.Value.Emit()
	}
	return out
}
