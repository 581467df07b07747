package wire

import (
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ptcrun/ptc/internal/core"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// ResultPB converts a result.
func ResultPB(r *core.Result) *ptcv1.ExecuteResponse {
	out := &ptcv1.ExecuteResponse{
		ExecutionId:     r.ExecutionID,
		ResultJson:      jsonText(r.Result),
		Error:           ErrorPB(r.Error),
		ModelMessage:    text(r.ModelMessage),
		LogsTruncated:   r.LogsTruncated,
		EffectiveLimits: LimitsPB(r.EffectiveLimits),
		Stats: &ptcv1.ExecutionStats{
			Duration:        durationPB(r.Stats.Duration),
			CpuTime:         durationPB(r.Stats.CPUTime),
			PeakMemoryBytes: r.Stats.PeakMemoryBytes,
			ToolCalls:       r.Stats.ToolCalls,
			ToolResultBytes: r.Stats.ToolResultBytes,
			OutputBytes:     r.Stats.OutputBytes,
			QueueTime:       durationPB(r.Stats.QueueTime),
			LogBytes:        r.Stats.LogBytes,

			ResultTruncated:        r.Stats.ResultTruncated,
			UntruncatedOutputBytes: r.Stats.UntruncatedOutputBytes,
			DroppedItems:           r.Stats.DroppedItems,
			CutStrings:             r.Stats.CutStrings,
		},
	}
	stateOf(out, r)
	if len(r.Logs) > 0 {
		out.Logs = make([]*ptcv1.LogEntry, len(r.Logs))
		for i, l := range r.Logs {
			out.Logs[i] = LogPB(l)
		}
	}
	if len(r.Trace) > 0 {
		out.Trace = make([]*ptcv1.ToolCallRecord, len(r.Trace))
		for i, t := range r.Trace {
			out.Trace[i] = RecordPB(t)
		}
	}
	return out
}

// ResultFromPB converts a result. Effective limits that cannot be
// converted are left zero.
func ResultFromPB(r *ptcv1.ExecuteResponse) *core.Result {
	out := &core.Result{
		ExecutionID:   r.GetExecutionId(),
		Error:         ErrorFromPB(r.GetError()),
		ModelMessage:  r.GetModelMessage(),
		LogsTruncated: r.GetLogsTruncated(),
	}
	if r.GetError() == nil && r.GetResultJson() != "" {
		out.Result = json.RawMessage(r.GetResultJson())
	}
	if l, err := LimitsFromPB(r.GetEffectiveLimits()); err == nil {
		out.EffectiveLimits = l
	}
	st := r.GetStats()
	out.Stats = core.Stats{
		Duration:        st.GetDuration().AsDuration(),
		CPUTime:         st.GetCpuTime().AsDuration(),
		QueueTime:       st.GetQueueTime().AsDuration(),
		PeakMemoryBytes: st.GetPeakMemoryBytes(),
		ToolCalls:       st.GetToolCalls(),
		ToolResultBytes: st.GetToolResultBytes(),
		OutputBytes:     st.GetOutputBytes(),
		LogBytes:        st.GetLogBytes(),

		ResultTruncated:        st.GetResultTruncated(),
		UntruncatedOutputBytes: st.GetUntruncatedOutputBytes(),
		DroppedItems:           st.GetDroppedItems(),
		CutStrings:             st.GetCutStrings(),
	}
	for _, l := range r.GetLogs() {
		out.Logs = append(out.Logs, LogFromPB(l))
	}
	for _, t := range r.GetTrace() {
		out.Trace = append(out.Trace, RecordFromPB(t))
	}
	stateFromPB(out, r)
	return out
}

// LogPB converts a log entry.
func LogPB(e core.LogEntry) *ptcv1.LogEntry {
	return &ptcv1.LogEntry{Level: text(e.Level), Message: text(e.Message), At: durationpb.New(e.At)}
}

// LogFromPB converts a log entry.
func LogFromPB(e *ptcv1.LogEntry) core.LogEntry {
	return core.LogEntry{Level: e.GetLevel(), Message: e.GetMessage(), At: e.GetAt().AsDuration()}
}

// RecordPB converts a trace record.
func RecordPB(r core.Record) *ptcv1.ToolCallRecord {
	return &ptcv1.ToolCallRecord{
		Seq:           r.Seq,
		Tool:          text(r.Tool),
		ArgumentsJson: jsonText(r.Arguments),
		Ok:            r.OK,
		ErrorCode:     r.ErrorCode,
		ErrorMessage:  text(r.ErrorMessage),
		StartedAfter:  durationpb.New(r.StartedAfter),
		Duration:      durationpb.New(r.Duration),
		ResultBytes:   r.ResultBytes,
		ResultJson:    jsonText(r.Result),
	}
}

// RecordFromPB converts a trace record.
func RecordFromPB(r *ptcv1.ToolCallRecord) core.Record {
	return core.Record{
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

// durationPB converts a duration; zero becomes nil.
func durationPB(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}
