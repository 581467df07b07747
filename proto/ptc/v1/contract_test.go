package ptcv1_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ptcrun/ptc/internal/fault"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// TestErrorKindMatchesFault checks that every fault.Kind has the ErrorKind of
// the same number and name, so converting between them is a plain cast.
func TestErrorKindMatchesFault(t *testing.T) {
	kinds := append([]fault.Kind{fault.KindUnspecified}, fault.Kinds()...)
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			want := "ERROR_KIND_" + k.String()
			if got := ptcv1.ErrorKind(k).String(); got != want {
				t.Errorf("ErrorKind(%d) = %s, want %s", int32(k), got, want)
			}
			if got, ok := ptcv1.ErrorKind_value[want]; !ok || got != int32(k) {
				t.Errorf("ErrorKind_value[%q] = %d (present %v), want %d", want, got, ok, int32(k))
			}
		})
	}
	// The reverse direction: no proto value lacks a fault kind.
	values := ptcv1.ErrorKind(0).Descriptor().Values()
	if values.Len() != len(kinds) {
		t.Errorf("ErrorKind has %d values, fault has %d kinds; add the missing kind to both", values.Len(), len(kinds))
	}
	for i := range values.Len() {
		v := values.Get(i)
		if !slices.Contains(kinds, fault.Kind(v.Number())) {
			t.Errorf("ErrorKind %s = %d has no fault.Kind", v.Name(), v.Number())
		}
	}
}

func TestLanguageNumbers(t *testing.T) {
	tests := []struct {
		name string
		lang ptcv1.Language
		want int32
	}{
		{"unspecified", ptcv1.Language_LANGUAGE_UNSPECIFIED, 0},
		{"javascript", ptcv1.Language_LANGUAGE_JAVASCRIPT, 1},
		{"typescript", ptcv1.Language_LANGUAGE_TYPESCRIPT, 2},
		{"wasm", ptcv1.Language_LANGUAGE_WASM, 3},
		{"python", ptcv1.Language_LANGUAGE_PYTHON, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if int32(tt.lang) != tt.want {
				t.Errorf("%s = %d, want %d", tt.lang, int32(tt.lang), tt.want)
			}
		})
	}
	if n := ptcv1.Language(0).Descriptor().Values().Len(); n != len(tests) {
		t.Errorf("Language has %d values, want %d", n, len(tests))
	}
}

// TestRunnerServiceShape checks the service's methods and their streaming
// shapes, both in the descriptor and in the gRPC service description that
// servers register.
func TestRunnerServiceShape(t *testing.T) {
	tests := []struct {
		name         string
		input        string
		output       string
		clientStream bool
		serverStream bool
	}{
		{"Execute", "ptc.v1.ExecuteRequest", "ptc.v1.ExecuteResponse", false, false},
		{"ListTools", "ptc.v1.ListToolsRequest", "ptc.v1.ListToolsResponse", false, false},
		{"Session", "ptc.v1.SessionRequest", "ptc.v1.SessionResponse", true, true},
		{"Resume", "ptc.v1.ResumeRequest", "ptc.v1.ResumeResponse", false, false},
	}
	svc := ptcv1.File_ptc_v1_runner_proto.Services().ByName("RunnerService")
	if svc == nil {
		t.Fatal("service ptc.v1.RunnerService is missing")
	}
	if got := svc.FullName(); got != "ptc.v1.RunnerService" {
		t.Errorf("service full name = %s, want ptc.v1.RunnerService", got)
	}
	if got := ptcv1.RunnerService_ServiceDesc.ServiceName; got != "ptc.v1.RunnerService" {
		t.Errorf("ServiceDesc.ServiceName = %s, want ptc.v1.RunnerService", got)
	}
	if n := svc.Methods().Len(); n != len(tests) {
		t.Errorf("RunnerService has %d methods, want %d", n, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := svc.Methods().ByName(protoreflect.Name(tt.name))
			if m == nil {
				t.Fatalf("method %s is missing", tt.name)
			}
			if got := string(m.Input().FullName()); got != tt.input {
				t.Errorf("input = %s, want %s", got, tt.input)
			}
			if got := string(m.Output().FullName()); got != tt.output {
				t.Errorf("output = %s, want %s", got, tt.output)
			}
			if m.IsStreamingClient() != tt.clientStream || m.IsStreamingServer() != tt.serverStream {
				t.Errorf("streaming (client, server) = (%v, %v), want (%v, %v)",
					m.IsStreamingClient(), m.IsStreamingServer(), tt.clientStream, tt.serverStream)
			}

			unary := slices.ContainsFunc(ptcv1.RunnerService_ServiceDesc.Methods,
				func(d grpc.MethodDesc) bool { return d.MethodName == tt.name })
			i := slices.IndexFunc(ptcv1.RunnerService_ServiceDesc.Streams,
				func(d grpc.StreamDesc) bool { return d.StreamName == tt.name })
			switch {
			case !tt.clientStream && !tt.serverStream:
				if !unary || i >= 0 {
					t.Errorf("ServiceDesc does not list %s as a unary method", tt.name)
				}
			case i < 0 || unary:
				t.Errorf("ServiceDesc does not list %s as a stream", tt.name)
			default:
				s := ptcv1.RunnerService_ServiceDesc.Streams[i]
				if s.ClientStreams != tt.clientStream || s.ServerStreams != tt.serverStream {
					t.Errorf("ServiceDesc streams (client, server) = (%v, %v), want (%v, %v)",
						s.ClientStreams, s.ServerStreams, tt.clientStream, tt.serverStream)
				}
			}
		})
	}
}

// TestMessageFields pins the name, number, cardinality and type of every
// field that clients rely on. Adding a field is fine (add it here too);
// renaming, renumbering or retyping one breaks clients.
func TestMessageFields(t *testing.T) {
	tests := []struct {
		message string
		fields  []string // "number name [repeated] type [oneof name]"
	}{
		{"ExecuteRequest", []string{
			"1 script ptc.v1.Script",
			"2 input_json string",
			"3 limits ptc.v1.Limits",
			"4 allowed_tools repeated string",
			"5 result_schema_json string",
			"6 execution_id string",
			"7 deterministic bool",
			"8 seed uint64",
			"9 clock_start google.protobuf.Timestamp",
			"10 include_tool_results bool",
			"11 stream_logs bool",
			"12 stream_progress bool",
			"13 progress_values bool",
			"14 overflow_policy ptc.v1.OverflowPolicy",
			"15 resumable bool",
			"16 client_tools repeated ptc.v1.ToolDefinition",
			"17 require_approval repeated string",
			"18 no_server_tools bool",
		}},
		{"Script", []string{
			"1 language ptc.v1.Language",
			"2 source string",
			"3 wasm_module bytes",
			"4 module_sha256 string",
		}},
		{"Limits", []string{
			"1 timeout google.protobuf.Duration",
			"2 cpu_time google.protobuf.Duration",
			"3 memory_bytes int64",
			"4 max_tool_calls int32",
			"5 max_concurrent_tool_calls int32",
			"6 max_output_bytes int64",
			"7 max_log_bytes int64",
			"8 max_log_entries int32",
			"9 max_result_tokens int32",
			"10 max_pauses int32",
			"11 max_paused_time google.protobuf.Duration",
		}},
		{"ExecuteResponse", []string{
			"1 execution_id string",
			"2 result_json string",
			"3 error ptc.v1.ExecutionError",
			"4 model_message string",
			"5 logs repeated ptc.v1.LogEntry",
			"6 logs_truncated bool",
			"7 stats ptc.v1.ExecutionStats",
			"8 trace repeated ptc.v1.ToolCallRecord",
			"9 effective_limits ptc.v1.Limits",
			"10 state ptc.v1.ExecutionState",
			"11 pending_actions repeated ptc.v1.PendingAction",
			"12 continuation string",
			"13 continuation_expire_time google.protobuf.Timestamp",
		}},
		{"PendingAction", []string{
			"1 call_id string",
			"2 kind ptc.v1.ActionKind",
			"3 seq int32",
			"4 tool string",
			"5 arguments_json string",
			"6 idempotency_key string",
			"7 reason string",
			"8 traceparent string",
			"9 tracestate string",
		}},
		{"ResumeRequest", []string{
			"1 continuation string",
			"2 answers repeated ptc.v1.ActionAnswer",
			"3 wasm_module bytes",
		}},
		{"ResumeResponse", []string{
			"1 execution ptc.v1.ExecuteResponse",
		}},
		{"ActionAnswer", []string{
			"1 call_id string",
			"2 output_json string oneof outcome",
			"3 error ptc.v1.ToolError oneof outcome",
			"4 approval ptc.v1.Approval oneof outcome",
		}},
		{"Approval", []string{
			"1 approved bool",
			"2 reason string",
		}},
		{"ApprovalRequest", []string{
			"1 action ptc.v1.PendingAction",
			"2 deadline google.protobuf.Timestamp",
		}},
		{"ExecutionError", []string{
			"1 kind ptc.v1.ErrorKind",
			"2 message string",
			"3 line int32",
			"4 column int32",
			"5 stack string",
			"6 tool string",
			"7 limit int64",
			"8 observed int64",
		}},
		{"ExecutionStats", []string{
			"1 duration google.protobuf.Duration",
			"2 cpu_time google.protobuf.Duration",
			"3 peak_memory_bytes int64",
			"4 tool_calls int32",
			"5 tool_result_bytes int64",
			"6 output_bytes int64",
			"7 queue_time google.protobuf.Duration",
			"8 log_bytes int64",
			"9 result_truncated bool",
			"10 untruncated_output_bytes int64",
			"11 dropped_items int64",
			"12 cut_strings int64",
		}},
		{"LogEntry", []string{
			"1 level string",
			"2 message string",
			"3 at google.protobuf.Duration",
		}},
		{"ToolCallRecord", []string{
			"1 seq int32",
			"2 tool string",
			"3 arguments_json string",
			"4 ok bool",
			"5 error_code string",
			"6 error_message string",
			"7 started_after google.protobuf.Duration",
			"8 duration google.protobuf.Duration",
			"9 result_bytes int64",
			"10 result_json string",
		}},
		{"ToolDefinition", []string{
			"1 name string",
			"2 description string",
			"3 input_schema_json string",
			"4 output_schema_json string",
			"5 requires_approval bool",
		}},
		{"ListToolsRequest", []string{
			"1 query string",
			"2 limit int32",
			"3 names repeated string",
			"4 include_typescript bool",
			"5 language ptc.v1.Language",
		}},
		{"ListToolsResponse", []string{
			"1 tools repeated ptc.v1.ToolDefinition",
			"2 typescript string",
			"3 prompt string",
			"4 approx_tokens int32",
			"5 matches repeated ptc.v1.ToolMatch",
		}},
		{"ToolMatch", []string{
			"1 name string",
			"2 score float",
		}},
		{"SessionRequest", []string{
			"1 start ptc.v1.SessionStart oneof msg",
			"2 tool_result ptc.v1.ToolResult oneof msg",
			"3 cancel ptc.v1.CancelExecution oneof msg",
			"4 approval_answer ptc.v1.ActionAnswer oneof msg",
		}},
		{"SessionStart", []string{
			"1 execute ptc.v1.ExecuteRequest",
			"2 client_tools repeated ptc.v1.ToolDefinition",
		}},
		{"ToolResult", []string{
			"1 call_id string",
			"2 output_json string oneof outcome",
			"3 error ptc.v1.ToolError oneof outcome",
		}},
		{"ToolError", []string{
			"1 code string",
			"2 message string",
		}},
		{"CancelExecution", []string{
			"1 reason string",
		}},
		{"SessionResponse", []string{
			"1 tool_call ptc.v1.ToolCall oneof msg",
			"2 log ptc.v1.LogEntry oneof msg",
			"3 result ptc.v1.ExecuteResponse oneof msg",
			"4 protocol_error ptc.v1.ProtocolError oneof msg",
			"5 progress ptc.v1.ToolProgress oneof msg",
			"6 approval_request ptc.v1.ApprovalRequest oneof msg",
		}},
		{"ToolProgress", []string{
			"1 phase ptc.v1.ToolProgress.Phase",
			"2 seq int32",
			"3 tool string",
			"4 started_after google.protobuf.Duration",
			"5 duration google.protobuf.Duration",
			"6 argument_bytes int64",
			"7 result_bytes int64",
			"8 outcome string",
			"9 dropped int64",
			"10 arguments_json string",
			"11 result_json string",
			"12 error_message string",
		}},
		{"ToolCall", []string{
			"1 call_id string",
			"2 tool string",
			"3 arguments_json string",
			"4 idempotency_key string",
			"5 deadline google.protobuf.Timestamp",
			"6 traceparent string",
			"7 tracestate string",
		}},
		{"ProtocolError", []string{
			"1 call_id string",
			"2 message string",
		}},
	}
	messages := ptcv1.File_ptc_v1_runner_proto.Messages()
	if messages.Len() != len(tests) {
		t.Errorf("runner.proto has %d messages, the test knows %d; add the new message here", messages.Len(), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			md := messages.ByName(protoreflect.Name(tt.message))
			if md == nil {
				t.Fatalf("message ptc.v1.%s is missing", tt.message)
			}
			var got []string
			fields := md.Fields()
			for i := range fields.Len() {
				got = append(got, describeField(fields.Get(i)))
			}
			if !slices.Equal(got, tt.fields) {
				t.Errorf("fields of %s:\n got: %s\nwant: %s", tt.message,
					strings.Join(got, "\n      "), strings.Join(tt.fields, "\n      "))
			}
		})
	}
}

// describeField renders a field as "number name [repeated] type [oneof name]".
func describeField(fd protoreflect.FieldDescriptor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s ", fd.Number(), fd.Name())
	if fd.IsList() {
		b.WriteString("repeated ")
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		b.WriteString(string(fd.Message().FullName()))
	case protoreflect.EnumKind:
		b.WriteString(string(fd.Enum().FullName()))
	default:
		b.WriteString(fd.Kind().String())
	}
	if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
		fmt.Fprintf(&b, " oneof %s", o.Name())
	}
	return b.String()
}
