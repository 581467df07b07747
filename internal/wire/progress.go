package wire

import (
	"encoding/json"

	"github.com/ptcrun/ptc/internal/core"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// maxProgressValueBytes bounds the arguments, the result and the error
// message one progress message carries (as a trace record bounds its
// arguments): a larger value goes as the stub core.StubJSON makes, an
// error message cut. A client that reads slowly holds at most a queue of
// such messages.
const maxProgressValueBytes = 16 << 10

// ProgressPB converts a tool call event into a ToolProgress message; the
// arguments, result and error message go in only with values, each at
// most maxProgressValueBytes. dropped counts the messages dropped before
// this one.
func ProgressPB(ev *core.CallEvent, values bool, dropped int64) *ptcv1.ToolProgress {
	out := &ptcv1.ToolProgress{
		Phase:         ptcv1.ToolProgress_PHASE_STARTED,
		Seq:           ev.Seq,
		Tool:          text(ev.Tool),
		StartedAfter:  durationPB(ev.StartedAfter),
		ArgumentBytes: int64(len(ev.Arguments)),
		Dropped:       dropped,
	}
	if values {
		out.ArgumentsJson = jsonText(core.StubJSON(ev.Arguments, maxProgressValueBytes))
	}
	if !ev.Finished {
		return out
	}
	out.Phase = ptcv1.ToolProgress_PHASE_FINISHED
	out.Duration = durationPB(ev.Duration)
	out.Outcome = ev.Outcome()
	if ev.OK {
		out.ResultBytes = int64(len(ev.Result))
	}
	if values {
		out.ResultJson = jsonText(core.StubJSON(ev.Result, maxProgressValueBytes))
		out.ErrorMessage = text(core.Clip(ev.ErrorMessage, maxProgressValueBytes))
	}
	return out
}

// ProgressFromPB converts a ToolProgress message into the event it reports
// (with the sizes it carries: Arguments and Result are the values when the
// message has them) and the count of messages dropped before it.
func ProgressFromPB(m *ptcv1.ToolProgress) (ev core.CallEvent, argumentBytes, resultBytes, dropped int64) {
	ev = core.CallEvent{
		Seq:          m.GetSeq(),
		Tool:         m.GetTool(),
		StartedAfter: m.GetStartedAfter().AsDuration(),
		Finished:     m.GetPhase() == ptcv1.ToolProgress_PHASE_FINISHED,
		Duration:     m.GetDuration().AsDuration(),
		ErrorMessage: m.GetErrorMessage(),
	}
	if s := m.GetArgumentsJson(); s != "" {
		ev.Arguments = json.RawMessage(s)
	}
	if s := m.GetResultJson(); s != "" {
		ev.Result = json.RawMessage(s)
	}
	if ev.Finished {
		if o := m.GetOutcome(); o == "ok" {
			ev.OK = true
		} else {
			ev.ErrorCode = o
		}
	}
	return ev, m.GetArgumentBytes(), m.GetResultBytes(), m.GetDropped()
}
