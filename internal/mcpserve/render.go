package mcpserve

import (
	"encoding/json"
	"log/slog"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
)

// Keys of the _meta ptc adds to execute's results.
const (
	MetaExecutionID   = "ptc/executionId"
	MetaStats         = "ptc/stats"
	MetaLogs          = "ptc/logs"
	MetaLogsTruncated = "ptc/logsTruncated"
	MetaTrace         = "ptc/trace"
	MetaTraceOmitted  = "ptc/traceOmitted"
)

// MaxTraceRecords bounds the trace records in a result's _meta; the rest
// are counted in MetaTraceOmitted.
const MaxTraceRecords = 256

// stats is MetaStats: the execution's measurements.
type stats struct {
	DurationMs      float64 `json:"durationMs"`
	CPUTimeMs       float64 `json:"cpuTimeMs"`
	QueueTimeMs     float64 `json:"queueTimeMs"`
	PeakMemoryBytes int64   `json:"peakMemoryBytes"`
	ToolCalls       int32   `json:"toolCalls"`
	ToolResultBytes int64   `json:"toolResultBytes"`
	OutputBytes     int64   `json:"outputBytes"`
	LogBytes        int64   `json:"logBytes"`
	// The result was cut to fit the output limits (overflow policy
	// truncate): its size before, and what was cut.
	ResultTruncated        bool  `json:"resultTruncated,omitempty"`
	UntruncatedOutputBytes int64 `json:"untruncatedOutputBytes,omitempty"`
	DroppedItems           int64 `json:"droppedItems,omitempty"`
	CutStrings             int64 `json:"cutStrings,omitempty"`
}

// logEntry is one entry of MetaLogs.
type logEntry struct {
	Level   string  `json:"level"`
	Message string  `json:"message"`
	AtMs    float64 `json:"atMs"`
}

// traceRecord is one entry of MetaTrace.
type traceRecord struct {
	Seq            int32   `json:"seq"`
	Tool           string  `json:"tool"`
	OK             bool    `json:"ok"`
	ErrorCode      string  `json:"errorCode,omitempty"`
	StartedAfterMs float64 `json:"startedAfterMs"`
	DurationMs     float64 `json:"durationMs"`
	ResultBytes    int64   `json:"resultBytes"`
}

// failure is the structuredContent error of a program that failed
// (Kind) or of a call that did not run (Code).
type failure struct {
	Kind     string `json:"kind,omitempty"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Limit    int64  `json:"limit,omitempty"`
	Observed int64  `json:"observed,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// renderResult turns an execution's result into execute's answer: the
// result JSON as text and as structuredContent, or, for a program that
// failed, isError with the model-facing message; the stats, logs and
// trace in _meta.
func renderResult(r *core.Result) *sdk.CallToolResult {
	out := &sdk.CallToolResult{Meta: sdk.Meta{MetaExecutionID: r.ExecutionID, MetaStats: stats{
		DurationMs: ms(r.Stats.Duration), CPUTimeMs: ms(r.Stats.CPUTime), QueueTimeMs: ms(r.Stats.QueueTime),
		PeakMemoryBytes: r.Stats.PeakMemoryBytes, ToolCalls: r.Stats.ToolCalls, ToolResultBytes: r.Stats.ToolResultBytes,
		OutputBytes: r.Stats.OutputBytes, LogBytes: r.Stats.LogBytes,
		ResultTruncated: r.Stats.ResultTruncated, UntruncatedOutputBytes: r.Stats.UntruncatedOutputBytes,
		DroppedItems: r.Stats.DroppedItems, CutStrings: r.Stats.CutStrings,
	}}}
	if len(r.Logs) > 0 {
		logs := make([]logEntry, len(r.Logs))
		for i, e := range r.Logs {
			logs[i] = logEntry{Level: e.Level, Message: e.Message, AtMs: ms(e.At)}
		}
		out.Meta[MetaLogs] = logs
	}
	if r.LogsTruncated {
		out.Meta[MetaLogsTruncated] = true
	}
	if len(r.Trace) > 0 {
		n := min(len(r.Trace), MaxTraceRecords)
		trace := make([]traceRecord, n)
		for i, c := range r.Trace[:n] {
			trace[i] = traceRecord{Seq: c.Seq, Tool: c.Tool, OK: c.OK, ErrorCode: c.ErrorCode,
				StartedAfterMs: ms(c.StartedAfter), DurationMs: ms(c.Duration), ResultBytes: c.ResultBytes}
		}
		out.Meta[MetaTrace] = trace
		if len(r.Trace) > n {
			out.Meta[MetaTraceOmitted] = len(r.Trace) - n
		}
	}
	if e := r.Error; e != nil {
		out.IsError = true
		out.Content = []sdk.Content{&sdk.TextContent{Text: r.ModelMessage}}
		out.StructuredContent = map[string]any{"error": failure{Kind: e.Kind.String(), Message: e.Message,
			Line: e.Line, Column: e.Column, Tool: e.Tool, Limit: e.Limit, Observed: e.Observed}}
		return out
	}
	out.Content = []sdk.Content{&sdk.TextContent{Text: string(r.Result)}}
	out.StructuredContent = map[string]json.RawMessage{"result": r.Result}
	return out
}

// refused is the answer to a call that did not run: isError with a
// message that says what to change.
func refused(code fault.Code, msg string) *sdk.CallToolResult {
	text := "ptc did not run the program: " + msg
	if code == fault.CodeResourceExhausted || code == fault.CodeUnavailable {
		text = "ptc could not run the program now: " + msg
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}},
		StructuredContent: map[string]any{"error": failure{Code: code.String(), Message: msg}}}
}

// logLevel is the level of a call's log record: error for a failure
// inside ptc, info otherwise.
func logLevel(outcome string) slog.Level {
	switch outcome {
	case fault.CodeInternal.String(), fault.KindInternal.String():
		return slog.LevelError
	}
	return slog.LevelInfo
}

// logAttrs are the attributes of a call's log record.
func logAttrs(cs *callerServer, req *sdk.CallToolRequest, tool, outcome, id string, start time.Time) []slog.Attr {
	attrs := []slog.Attr{slog.String("tool", tool), slog.String("caller", cs.caller.Key),
		slog.String("outcome", outcome), slog.Float64("mcp.time_ms", milliseconds(time.Since(start)))}
	if req.Session != nil {
		attrs = append(attrs, slog.String("session", req.Session.ID()))
	}
	if id != "" {
		attrs = append(attrs, slog.String("execution_id", id))
	}
	return attrs
}

// milliseconds is d in milliseconds, the unit of every duration in ptcd's
// logs (grpc.time_ms, mcp.time_ms).
func milliseconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
