package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// Every machine-readable output of the CLI (--json) is a ptc.v1 message in
// protobuf's JSON mapping, as grpcurl prints it: lowerCamelCase field
// names, enum value names, durations as strings ("0.010830s"), 64-bit
// integers as strings, unset fields left out.

// printJSON writes m in protobuf's JSON mapping, indented by two spaces.
// protojson varies its whitespace on purpose; json.Indent makes it stable.
func printJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.Marshal(m)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// responsePB is a result as the contract's ExecuteResponse: the same
// message a server answers, converted by internal/wire. The public result
// converts back to the internal model field for field (ptc.Stats,
// LogEntry, ToolCallRecord and Limits have the layout of their internal
// counterparts).
func responsePB(r *ptc.Result) *ptcv1.ExecuteResponse {
	c := &core.Result{
		ExecutionID:     r.ExecutionID,
		Result:          r.Result,
		Error:           faultOf(r.Error),
		ModelMessage:    r.ModelMessage,
		LogsTruncated:   r.LogsTruncated,
		Stats:           core.Stats(r.Stats),
		EffectiveLimits: limits.Limits(r.EffectiveLimits),
	}
	for _, e := range r.Logs {
		c.Logs = append(c.Logs, core.LogEntry(e))
	}
	for _, t := range r.Trace {
		c.Trace = append(c.Trace, core.Record(t))
	}
	for _, a := range r.Pending {
		kind := core.ActionClientTool
		if a.Approval {
			kind = core.ActionApproval
		}
		c.Pending = append(c.Pending, core.Action{CallID: a.CallID, Kind: kind, Seq: a.Seq, Tool: a.Tool,
			Arguments: a.Arguments, IdempotencyKey: a.IdempotencyKey, Reason: a.Reason})
	}
	c.Continuation, c.ContinuationExpires = r.Continuation, r.ContinuationExpires
	return wire.ResultPB(c)
}

// faultOf is the internal form of a script's error; nil stays nil.
func faultOf(e *ptc.ExecutionError) *fault.Error {
	if e == nil {
		return nil
	}
	return &fault.Error{
		Kind:     fault.Kind(e.Kind),
		Message:  e.Message,
		Line:     e.Line,
		Column:   e.Column,
		Stack:    e.Stack,
		Tool:     e.Tool,
		Limit:    e.Limit,
		Observed: e.Observed,
	}
}

// printResultJSON writes res as an ExecuteResponse.
func printResultJSON(w io.Writer, res *ptc.Result) error {
	if err := printJSON(w, responsePB(res)); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}
