// Package wire converts between ptc's Go types and the ptc.v1 protobuf
// messages, for the parts shared by the server and the client: limits,
// errors, stats pieces, logs, trace records and tool definitions.
//
// It imports only leaf packages (never the root ptc package), so both the
// root client and the server can use it.
package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/runtime"
	"github.com/ptcrun/ptc/tools"
)

// Duration converts a protobuf duration, rejecting invalid or negative ones.
// A nil duration is zero.
func Duration(field string, d *durationpb.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if err := d.CheckValid(); err != nil {
		return 0, fmt.Errorf("%s: %v", field, err)
	}
	v := d.AsDuration()
	if v < 0 {
		return 0, fmt.Errorf("%s is negative", field)
	}
	return v, nil
}

// DurationPB converts a duration; zero becomes nil.
func DurationPB(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// LimitsFromPB converts requested limits (nil means all defaults).
func LimitsFromPB(l *ptcv1.Limits) (limits.Limits, error) {
	if l == nil {
		return limits.Limits{}, nil
	}
	timeout, err := Duration("limits.timeout", l.GetTimeout())
	if err != nil {
		return limits.Limits{}, err
	}
	cpu, err := Duration("limits.cpu_time", l.GetCpuTime())
	if err != nil {
		return limits.Limits{}, err
	}
	out := limits.Limits{
		Timeout:                timeout,
		CPUTime:                cpu,
		MemoryBytes:            l.GetMemoryBytes(),
		MaxToolCalls:           l.GetMaxToolCalls(),
		MaxConcurrentToolCalls: l.GetMaxConcurrentToolCalls(),
		MaxOutputBytes:         l.GetMaxOutputBytes(),
		MaxLogBytes:            l.GetMaxLogBytes(),
	}
	if err := out.CheckRequest(); err != nil {
		return limits.Limits{}, fmt.Errorf("limits: %v", err)
	}
	return out, nil
}

// LimitsPB converts limits.
func LimitsPB(l limits.Limits) *ptcv1.Limits {
	return &ptcv1.Limits{
		Timeout:                DurationPB(l.Timeout),
		CpuTime:                DurationPB(l.CPUTime),
		MemoryBytes:            l.MemoryBytes,
		MaxToolCalls:           l.MaxToolCalls,
		MaxConcurrentToolCalls: l.MaxConcurrentToolCalls,
		MaxOutputBytes:         l.MaxOutputBytes,
		MaxLogBytes:            l.MaxLogBytes,
	}
}

// ErrorPB converts an execution failure; nil stays nil.
func ErrorPB(e *fault.Error) *ptcv1.ExecutionError {
	if e == nil {
		return nil
	}
	return &ptcv1.ExecutionError{
		Kind:     ptcv1.ErrorKind(e.Kind),
		Message:  e.Message,
		Line:     clamp32(e.Line),
		Column:   clamp32(e.Column),
		Stack:    e.Stack,
		Tool:     e.Tool,
		Limit:    e.Limit,
		Observed: e.Observed,
	}
}

// ErrorFromPB converts an execution failure; nil stays nil.
func ErrorFromPB(e *ptcv1.ExecutionError) *fault.Error {
	if e == nil {
		return nil
	}
	return &fault.Error{
		Kind:     fault.Kind(e.GetKind()),
		Message:  e.GetMessage(),
		Line:     int(e.GetLine()),
		Column:   int(e.GetColumn()),
		Stack:    e.GetStack(),
		Tool:     e.GetTool(),
		Limit:    e.GetLimit(),
		Observed: e.GetObserved(),
	}
}

// LogPB converts a log entry.
func LogPB(e runtime.LogEntry) *ptcv1.LogEntry {
	return &ptcv1.LogEntry{Level: e.Level, Message: e.Message, At: durationpb.New(e.At)}
}

// LogFromPB converts a log entry.
func LogFromPB(e *ptcv1.LogEntry) runtime.LogEntry {
	return runtime.LogEntry{Level: e.GetLevel(), Message: e.GetMessage(), At: e.GetAt().AsDuration()}
}

// RecordPB converts a trace record.
func RecordPB(r bridge.Record) *ptcv1.ToolCallRecord {
	return &ptcv1.ToolCallRecord{
		Seq:           r.Seq,
		Tool:          r.Tool,
		ArgumentsJson: string(r.Arguments),
		Ok:            r.OK,
		ErrorCode:     r.ErrorCode,
		ErrorMessage:  r.ErrorMessage,
		StartedAfter:  durationpb.New(r.StartedAfter),
		Duration:      durationpb.New(r.Duration),
		ResultBytes:   r.ResultBytes,
		ResultJson:    string(r.Result),
	}
}

// RecordFromPB converts a trace record.
func RecordFromPB(r *ptcv1.ToolCallRecord) bridge.Record {
	return bridge.Record{
		Seq:          r.GetSeq(),
		Tool:         r.GetTool(),
		Arguments:    json.RawMessage(r.GetArgumentsJson()),
		OK:           r.GetOk(),
		ErrorCode:    r.GetErrorCode(),
		ErrorMessage: r.GetErrorMessage(),
		StartedAfter: r.GetStartedAfter().AsDuration(),
		Duration:     r.GetDuration().AsDuration(),
		ResultBytes:  r.GetResultBytes(),
		Result:       rawOrNil(r.GetResultJson()),
	}
}

// DefinitionPB converts a tool definition.
func DefinitionPB(d tools.Definition) *ptcv1.ToolDefinition {
	return &ptcv1.ToolDefinition{
		Name:             d.Name,
		Description:      d.Description,
		InputSchemaJson:  string(d.InputSchema),
		OutputSchemaJson: string(d.OutputSchema),
	}
}

// DefinitionFromPB converts a tool definition.
func DefinitionFromPB(d *ptcv1.ToolDefinition) tools.Definition {
	return tools.Definition{
		Name:         d.GetName(),
		Description:  d.GetDescription(),
		InputSchema:  rawOrNil(d.GetInputSchemaJson()),
		OutputSchema: rawOrNil(d.GetOutputSchemaJson()),
	}
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// clamp32 converts an int to int32, saturating instead of wrapping.
func clamp32(v int) int32 {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32
	case v < math.MinInt32:
		return math.MinInt32
	}
	return int32(v)
}
