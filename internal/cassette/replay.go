package cassette

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/plural"
	"github.com/ptcrun/ptc/tools"
)

// CodeDivergence is the tool error code a replayed call gets when it does
// not match the recording (scripts see it in err.code).
const CodeDivergence = "replay_divergence"

// Replayer answers tool calls from a cassette. It is safe for concurrent
// use; its handlers never call a real tool.
type Replayer struct {
	c *Cassette

	mu sync.Mutex
	// first is the earliest divergence seen so far (Observe and the
	// handlers), so that every report names the same call.
	first *Divergence
}

// NewReplayer returns a Replayer for c.
func NewReplayer(c *Cassette) *Replayer { return &Replayer{c: c} }

// Tools returns one tool per recorded definition, answered from the
// recording: call #n gets the recorded result (or error) of call #n if it
// has the same tool and the same arguments (as JSON values), and a
// replay_divergence error otherwise.
func (r *Replayer) Tools() []tools.Tool {
	out := make([]tools.Tool, 0, len(r.c.Request.Tools))
	for _, d := range r.c.Request.Tools {
		out = append(out, tools.Tool{Definition: d, Handler: r.handle})
	}
	return out
}

func (r *Replayer) handle(_ context.Context, call tools.Call) (json.RawMessage, error) {
	seq := call.Seq
	if seq == 0 {
		seq = seqOf(call.IdempotencyKey)
	}
	if d := r.diverges(seq, call.Tool, call.Arguments); d != nil {
		return nil, &tools.Error{Code: CodeDivergence, Message: d.Summary()}
	}
	rec := r.c.Calls[seq-1]
	if rec.Error != nil {
		return nil, &tools.Error{Code: rec.Error.Code, Message: rec.Error.Message}
	}
	return append(json.RawMessage(nil), rec.Result...), nil
}

// diverges compares call seq with the recording. On a divergence it
// returns the earliest one seen (an earlier call may have diverged without
// reaching a handler: refused for its arguments, and caught by the
// script), so that the script's error and the report name one call.
func (r *Replayer) diverges(seq int32, tool string, args json.RawMessage) *Divergence {
	calls := r.c.Calls
	var d *Divergence
	if seq < 1 || int(seq) > len(calls) {
		d = &Divergence{Seq: seq, Reason: ReasonExtra, ActualTool: tool, Actual: args, RecordedCalls: len(calls)}
	} else {
		d = compareCall(calls[seq-1], tool, args, true)
	}
	if d == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == nil || d.Seq < r.first.Seq {
		r.first = d
	}
	return r.first
}

// Observe makes req report its tool calls to r as they start, so that a
// call that diverges before reaching a tool (refused for its arguments or
// its name, and caught by the script) is the divergence later calls
// report. It keeps req's own OnProgress, and sets ProgressValues.
func (r *Replayer) Observe(req *ptc.Request) {
	next := req.OnProgress
	req.ProgressValues = true
	req.OnProgress = func(e ptc.ProgressEvent) {
		if e.Arguments != nil && e.Seq > 0 {
			r.diverges(e.Seq, e.Tool, e.Arguments)
		}
		if next != nil {
			next(e)
		}
	}
}

// seqOf reads the seq from an idempotency key "<execution id>/<seq>" (client
// tools served over a Session see the key but not the seq).
func seqOf(key string) int32 {
	i := strings.LastIndexByte(key, '/')
	n, err := strconv.ParseInt(key[i+1:], 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// Divergence reasons.
const (
	ReasonTool      = "tool"
	ReasonArguments = "arguments"
	ReasonExtra     = "extra call"
	ReasonMissing   = "missing call"
	ReasonResult    = "result"
)

// Divergence is the first point where a replayed execution differs from
// its recording. It implements error; Error gives a multi-line report
// with both sides and a compact diff.
type Divergence struct {
	// Seq is the call's seq (0 for a result divergence).
	Seq int32
	// Reason is one of the Reason constants.
	Reason string
	// RecordedTool and ActualTool name the call's tool on each side.
	RecordedTool, ActualTool string
	// Recorded and Actual are the arguments (or, for ReasonResult, the
	// results) on each side; nil where a side has nothing.
	Recorded, Actual json.RawMessage
	// RecordedCalls is the number of calls in the recording.
	RecordedCalls int
}

// tool is the tool name to show for the call.
func (d *Divergence) tool() string {
	if d.ActualTool != "" {
		return d.ActualTool
	}
	return d.RecordedTool
}

// Summary is the one-line form of the divergence.
func (d *Divergence) Summary() string {
	switch d.Reason {
	case ReasonTool:
		return fmt.Sprintf("replay divergence at call #%d: the recording called %s, the script called %s", d.Seq, d.RecordedTool, d.ActualTool)
	case ReasonArguments:
		return fmt.Sprintf("replay divergence at call #%d (%s): the arguments differ from the recording", d.Seq, d.tool())
	case ReasonExtra:
		return fmt.Sprintf("replay divergence at call #%d (%s): the script made a call the recording does not have (it has %s)", d.Seq, d.tool(),
			plural.Count(d.RecordedCalls, "call", "calls"))
	case ReasonMissing:
		return fmt.Sprintf("replay divergence at call #%d (%s): the recording has a call the script did not make", d.Seq, d.tool())
	default:
		return "replay divergence in the result: the script's result differs from the recording"
	}
}

// Error returns the summary followed by the recorded and actual sides and
// a diff of the two.
func (d *Divergence) Error() string {
	var b strings.Builder
	b.WriteString(d.Summary())
	side := func(label, tool string, v json.RawMessage) {
		if v == nil {
			return
		}
		if tool != "" && d.Reason == ReasonTool {
			fmt.Fprintf(&b, "\n  %s %s %s", label, tool, Compact(v, 400))
			return
		}
		fmt.Fprintf(&b, "\n  %s %s", label, Compact(v, 400))
	}
	side("recorded:", d.RecordedTool, d.Recorded)
	side("actual:  ", d.ActualTool, d.Actual)
	if d.Recorded != nil && d.Actual != nil && d.Reason != ReasonTool {
		lines := Diff(d.Recorded, d.Actual, 8)
		if len(lines) > 0 {
			b.WriteString("\n  diff (recorded → actual):")
			for _, l := range lines {
				b.WriteString("\n    " + l)
			}
		}
	}
	return b.String()
}

// compareCall compares a recorded call with an actual one. raw says the
// actual arguments are the real ones (a handler's view), which may be
// matched against a recorded truncation stub by their SHA-256.
func compareCall(rec Call, tool string, args json.RawMessage, raw bool) *Divergence {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if rec.Tool != tool {
		return &Divergence{Seq: rec.Seq, Reason: ReasonTool, RecordedTool: rec.Tool, ActualTool: tool, Recorded: rec.Arguments, Actual: args}
	}
	if Equal(rec.Arguments, args) {
		return nil
	}
	if raw && stubMatches(rec.Arguments, args) {
		return nil
	}
	return &Divergence{Seq: rec.Seq, Reason: ReasonArguments, RecordedTool: rec.Tool, ActualTool: tool, Recorded: rec.Arguments, Actual: args}
}

// stubMatches reports whether stub is a trace's truncation stub of args.
func stubMatches(stub, args json.RawMessage) bool {
	var s struct {
		Truncated bool   `json:"$truncated"`
		Bytes     int    `json:"bytes"`
		SHA256    string `json:"sha256"`
	}
	if err := json.Unmarshal(stub, &s); err != nil || !s.Truncated {
		return false
	}
	sum := sha256.Sum256(args)
	return s.Bytes == len(args) && s.SHA256 == hex.EncodeToString(sum[:])
}

// Check compares a replayed result with the recording and returns the
// first divergence, or nil when the run matches: the same calls (seq,
// tool, arguments) in the same order, and the same result or failure.
func (r *Replayer) Check(res *ptc.Result) *Divergence {
	return Compare(r.c, res)
}

// Compare compares a result with the cassette c (see Replayer.Check).
func Compare(c *Cassette, res *ptc.Result) *Divergence {
	rec := c.Calls
	for i := 0; i < max(len(rec), len(res.Trace)); i++ {
		switch {
		case i >= len(res.Trace):
			return &Divergence{Seq: rec[i].Seq, Reason: ReasonMissing, RecordedTool: rec[i].Tool, Recorded: rec[i].Arguments, RecordedCalls: len(rec)}
		case i >= len(rec):
			a := res.Trace[i]
			return &Divergence{Seq: a.Seq, Reason: ReasonExtra, ActualTool: a.Tool, Actual: a.Arguments, RecordedCalls: len(rec)}
		}
		a := res.Trace[i]
		if d := compareCall(rec[i], a.Tool, a.Arguments, false); d != nil {
			d.Seq = a.Seq
			return d
		}
	}
	want, got := c.Final, FinalOf(res)
	if !sameFinal(want, got) {
		return &Divergence{Reason: ReasonResult, Recorded: finalJSON(want), Actual: finalJSON(got), RecordedCalls: len(rec)}
	}
	return nil
}

func sameFinal(a, b Final) bool {
	if a.Error != nil || b.Error != nil {
		return a.Error != nil && b.Error != nil && *a.Error == *b.Error
	}
	return Equal(a.Result, b.Result)
}

// finalJSON shows a final line as JSON: the result, or {"error": {...}}.
func finalJSON(f Final) json.RawMessage {
	if f.Error == nil {
		return f.Result
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any{"error": f.Error})
	return bytes.TrimSpace(buf.Bytes())
}
