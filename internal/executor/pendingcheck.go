package executor

import (
	"encoding/json"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/tools"
)

// A Resume refused for its answers is refused before the paused state is
// read, when it can be: the continuation records the pending calls
// (durable.PendingCall), and precheckAnswers checks the answers against
// them. Only a client tool's output schema is not in the continuation; the
// schemas of the client tools a paused execution waits for are remembered
// here by pause id once its state was read (a bounded number of pauses, of
// schemas of bounded size), so that a refusal repeated for its output is
// not a read of the state each time either.
const (
	// maxRememberedPauses bounds the paused executions whose output
	// schemas are remembered.
	maxRememberedPauses = 256
	// maxRememberedOutputValues bounds the JSON values of the output
	// schemas remembered for one paused execution (as maxCachedSchemaValues
	// bounds one cached schema); larger ones are not remembered.
	maxRememberedOutputValues = 500
)

// pausedOutputs are the output schemas of the client tools a paused
// execution waits for, by tool name.
type pausedOutputs map[string]*tools.Schema

// errUndecided is what an output check of precheckAnswers returns for an
// output that only the tool's output schema, in the state, can decide.
var errUndecided = &fault.Error{Code: fault.CodeInternal, Message: "the output's check needs the paused state"}

// precheckAnswers checks answers against the pending calls a continuation
// records, without the paused state: it refuses them as checkAnswers
// would, with the same error, unless that error could only come from a
// client tool's output schema that is not remembered for the pause (or
// follow such a check): then it returns nil, and checkAnswers decides once
// the state is read.
func (e *Executor) precheckAnswers(pauseID string, calls []durable.PendingCall, answers []core.Answer) *fault.Error {
	pending := make([]core.Action, len(calls))
	plain := map[string]bool{}
	for i, c := range calls {
		pending[i] = core.Action{CallID: core.CallID(c.Seq), Kind: c.Kind, Seq: c.Seq, Tool: c.Tool}
		if c.PlainOutput {
			plain[c.Tool] = true
		}
	}
	outputs, _ := e.outputs.Get(pauseID)
	_, ferr := checkAnswers(pending, answers, func(tool string, out []byte) *fault.Error {
		if plain[tool] || !json.Valid(out) {
			// Output that is not JSON is refused alike with or without
			// an output schema.
			return checkOutputAgainst(tool, nil, out)
		}
		if s, ok := outputs[tool]; ok {
			return checkOutputAgainst(tool, s, out)
		}
		return errUndecided
	})
	if ferr == errUndecided {
		return nil
	}
	return ferr
}

// rememberOutputs remembers the output schemas of the client tools that
// the calls of p, a resume of pause pauseID, wait for; not when they are
// larger than maxRememberedOutputValues in all, or one is not found.
func (e *Executor) rememberOutputs(pauseID string, p *Prepared, pending []core.Action) {
	outputs := pausedOutputs{}
	values := 0
	for _, a := range pending {
		if a.Kind != core.ActionClientTool {
			continue
		}
		if _, ok := outputs[a.Tool]; ok {
			continue
		}
		t := p.tool(a.Tool)
		if t == nil {
			return
		}
		if t.Output != nil {
			values += t.Output.Values()
		}
		outputs[a.Tool] = t.Output
	}
	if values <= maxRememberedOutputValues {
		e.outputs.Add(pauseID, outputs)
	}
}
