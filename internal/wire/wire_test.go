package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// TestLimitsMatchProto: every row of the limits table has a ptc.v1.Limits
// field of its name and a matching kind, and every ptc.v1.Limits field has
// a row — so the conversion needs no code per limit and misses none.
func TestLimitsMatchProto(t *testing.T) {
	fds := (&ptcv1.Limits{}).ProtoReflect().Descriptor().Fields()
	if len(limitFields) != len(limits.Fields()) || fds.Len() != len(limits.Fields()) {
		t.Fatalf("%d rows, %d matched, %d proto fields", len(limits.Fields()), len(limitFields), fds.Len())
	}
	for _, f := range limitFields {
		var want protoreflect.Kind
		switch {
		case f.Unit == limits.Duration:
			want = protoreflect.MessageKind
		case f.Max == 1<<31-1:
			want = protoreflect.Int32Kind
		default:
			want = protoreflect.Int64Kind
		}
		if f.fd.Kind() != want {
			t.Errorf("%s: proto kind %s, want %s", f.Name, f.fd.Kind(), want)
		}
	}
	// Every field survives a round trip.
	var l limits.Limits
	for i, f := range limits.Fields() {
		f.Set(&l, int64(i+1)*1000)
	}
	back, err := LimitsFromPB(LimitsPB(l))
	if err != nil || back != l {
		t.Fatalf("round trip %+v, %v", back, err)
	}
	if _, err := LimitsFromPB(&ptcv1.Limits{Timeout: &durationpb.Duration{Seconds: 1, Nanos: -5}}); err == nil {
		t.Fatal("invalid duration accepted")
	}
	// Negative values convert; Prepare refuses them (validation happens once).
	if neg, err := LimitsFromPB(&ptcv1.Limits{MaxToolCalls: -1}); err != nil || neg.MaxToolCalls != -1 {
		t.Fatalf("%+v %v", neg, err)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	in := core.Request{
		ExecutionID:  "ex-1",
		Script:       core.Script{Language: core.LanguageTypeScript, Source: "return 1", ModuleSHA256: "ab"},
		Input:        json.RawMessage(`{"a":1}`),
		Limits:       limits.Limits{Timeout: time.Second, MaxLogEntries: 7},
		AllowedTools: []string{"x"}, ResultSchema: json.RawMessage(`{"type":"number"}`), IncludeToolResults: true,
		Determinism: core.Determinism{Deterministic: true, Seed: 9, ClockStart: time.Unix(100, 5).UTC(), ClockStartSet: true},
	}
	pb := RequestPB(in)
	if pb.GetStreamLogs() {
		t.Fatal("stream_logs without OnLog")
	}
	b, err := proto.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	var back ptcv1.ExecuteRequest
	if err := proto.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, ferr := RequestFromPB(&back)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip\n%+v\n%+v", got, in)
	}
	for _, bad := range []*ptcv1.ExecuteRequest{nil, {}, {Script: &ptcv1.Script{Source: "x"}}} {
		if _, err := RequestFromPB(bad); err == nil || err.Code != fault.CodeInvalidArgument {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// TestClockStartPresence: a clock start travels by presence, the zero time
// included; none given stays none.
func TestClockStartPresence(t *testing.T) {
	for _, d := range []core.Determinism{
		{Deterministic: true},
		{Deterministic: true, ClockStartSet: true},
		{Deterministic: true, ClockStart: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), ClockStartSet: true},
		{Deterministic: true, ClockStart: time.Unix(0, 0).UTC(), ClockStartSet: true},
	} {
		in := core.Request{ExecutionID: "x", Script: core.Script{Language: core.LanguageJavaScript, Source: "return 1"}, Determinism: d}
		got, err := RequestFromPB(RequestPB(in))
		if err != nil || got.ClockStartSet != d.ClockStartSet || !got.ClockStart.Equal(d.ClockStart) {
			t.Errorf("%+v came back as %+v (%v)", d, got.Determinism, err)
		}
	}
}

func TestResultRoundTrip(t *testing.T) {
	in := &core.Result{
		ExecutionID: "ex-1", ModelMessage: "m", LogsTruncated: true,
		Error:           fault.Breach(fault.KindTimeout, 5, 7, "slow"),
		Logs:            []core.LogEntry{{Level: "warn", Message: "w", At: time.Millisecond}},
		Trace:           []core.Record{{Seq: 1, Tool: "t", Arguments: json.RawMessage(`{}`), ErrorCode: "x", ErrorMessage: "y", StartedAfter: 1, Duration: 2}},
		Stats:           core.Stats{Duration: time.Second, ToolCalls: 1, LogBytes: 1},
		EffectiveLimits: limits.Defaults(),
	}
	got := ResultFromPB(ResultPB(in))
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip\n%+v\n%+v", got, in)
	}
}

func TestStatusRoundTrip(t *testing.T) {
	in := &fault.Error{Code: fault.CodeResourceExhausted, Message: "queue is full", RetryAfter: 3 * time.Second}
	err := Status(in)
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || st.Message() != "queue is full" || len(st.Details()) != 1 {
		t.Fatalf("status %v", st)
	}
	if _, ok := st.Details()[0].(*errdetails.RetryInfo); !ok {
		t.Fatalf("details %v", st.Details())
	}
	back := ErrorFromStatus(err)
	if back.Code != in.Code || back.Message != in.Message || back.RetryAfter != in.RetryAfter || !errors.Is(back, err) {
		t.Fatalf("back %+v", back)
	}
	// A reason travels as a ptc ErrorInfo detail; another domain's is not ours.
	used := Status(fault.Reject(fault.CodeFailedPrecondition, "used").Because(fault.ReasonContinuationUsed))
	if back := ErrorFromStatus(used); back.Code != fault.CodeFailedPrecondition || back.Reason != fault.ReasonContinuationUsed {
		t.Fatalf("reason %+v", back)
	}
	foreign, _ := status.New(codes.FailedPrecondition, "x").WithDetails(&errdetails.ErrorInfo{Reason: "CONTINUATION_USED", Domain: "example.com"})
	if back := ErrorFromStatus(foreign.Err()); back.Reason != "" {
		t.Fatalf("foreign reason %+v", back)
	}
	// Anything that is not a request error is an opaque INTERNAL.
	if status.Code(Status(errors.New("secret detail"))) != codes.Internal || status.Convert(Status(errors.New("secret detail"))).Message() != "internal error" {
		t.Fatal("a plain error leaks")
	}
}

// FuzzRequestFromPB: any bytes a caller sends either fail to decode, are
// refused with INVALID_ARGUMENT, or give a request that converts back.
func FuzzRequestFromPB(f *testing.F) {
	seed, _ := proto.Marshal(RequestPB(core.Request{Script: core.Script{Language: core.LanguageJavaScript, Source: "return 1"},
		Limits: limits.Limits{Timeout: time.Second}}))
	f.Add(seed)
	f.Add([]byte{0x0a, 0x02, 0x08, 0x07})
	f.Fuzz(func(t *testing.T, b []byte) {
		var in ptcv1.ExecuteRequest
		if proto.Unmarshal(b, &in) != nil {
			return
		}
		req, err := RequestFromPB(&in)
		if err != nil {
			if err.Code != fault.CodeInvalidArgument {
				t.Fatalf("code %s", err.Code)
			}
			return
		}
		if _, err := RequestFromPB(RequestPB(req)); err != nil {
			t.Fatalf("a converted request does not convert back: %v", err)
		}
	})
}

// TestCallTraceContextTravels: a pending action keeps every field,
// the trace context of its span included, and a Session ToolCall carries
// the trace context it is given.
func TestCallTraceContextTravels(t *testing.T) {
	const tp, ts = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=x"
	a := core.Action{CallID: "c3", Kind: core.ActionClientTool, Seq: 3, Tool: "ask_user", Arguments: json.RawMessage(`{"q":1}`),
		IdempotencyKey: "ex/3", Reason: "r", Traceparent: tp, Tracestate: ts}
	if got := ActionFromPB(ActionPB(a)); !reflect.DeepEqual(got, a) {
		t.Fatalf("round trip\n%+v\n%+v", got, a)
	}
	tc := ToolCallPB("c1", tools.Call{Tool: "ask_user", IdempotencyKey: "ex/1"}, time.Time{}, tp, ts)
	if tc.GetTraceparent() != tp || tc.GetTracestate() != ts || tc.GetDeadline() != nil {
		t.Fatalf("tool call %v", tc)
	}
	if tc := ToolCallPB("c1", tools.Call{Tool: "ask_user"}, time.Time{}, "", ""); tc.GetTraceparent() != "" || tc.GetTracestate() != "" {
		t.Fatalf("untraced tool call %v", tc)
	}
}

// TestProgressValuesBounded: a progress message carries a call's values
// up to 16 KiB each; larger JSON goes as its stub, a longer error message
// cut, and the sizes stay exact.
func TestProgressValuesBounded(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("x", 20<<10) + `"`)
	small := json.RawMessage(`{"a":1}`)
	for _, tc := range []struct {
		name      string
		ev        core.CallEvent
		args, res string
	}{
		{"small", core.CallEvent{Seq: 1, Tool: "t", Arguments: small, Finished: true, OK: true, Result: small}, string(small), string(small)},
		{"large", core.CallEvent{Seq: 2, Tool: "t", Arguments: big, Finished: true, OK: true, Result: big},
			string(core.StubJSON(big, 0)), string(core.StubJSON(big, 0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := ProgressPB(&tc.ev, true, 0)
			if m.GetArgumentsJson() != tc.args || m.GetResultJson() != tc.res {
				t.Fatalf("values %q %q", clipForLog(m.GetArgumentsJson()), clipForLog(m.GetResultJson()))
			}
			if m.GetArgumentBytes() != int64(len(tc.ev.Arguments)) || m.GetResultBytes() != int64(len(tc.ev.Result)) {
				t.Fatalf("sizes %d %d", m.GetArgumentBytes(), m.GetResultBytes())
			}
		})
	}
	failed := core.CallEvent{Seq: 3, Tool: "t", Finished: true, ErrorCode: "tool_failed", ErrorMessage: strings.Repeat("é", 20<<10)}
	if msg := ProgressPB(&failed, true, 0).GetErrorMessage(); len(msg) > 16<<10+len("…") || !strings.HasSuffix(msg, "…") || !utf8.ValidString(msg) {
		t.Fatalf("error message of %d bytes", len(msg))
	}
}

func clipForLog(s string) string { return core.Clip(s, core.QuotedBytes) }
