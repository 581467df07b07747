package core

import (
	"fmt"
	"strings"

	"github.com/ptcrun/ptc/internal/fault"
)

// maxModelMessage bounds the failure paragraph shown to a model.
const maxModelMessage = 1500

// ModelMessage returns what a harness should paste into the model's
// context for a result: the result JSON on success (followed, when it was
// truncated, by one line saying so); on failure one short paragraph with
// the error kind, the message, the line and what to change. It never holds
// a Go stack, an internal path, the logs, the trace or a tool result the
// script did not return.
func ModelMessage(res *Result) string {
	if res.Error == nil {
		if st := res.Stats; st.ResultTruncated {
			return fmt.Sprintf("%s\n(ptc: this result was truncated from %d to %d bytes of JSON to fit the output limits: %d array items or object keys dropped, %d strings cut, each place marked \"[truncated: …]\". Aggregate, filter or page in the script to get what matters within the limits.)",
				res.Result, st.UntruncatedOutputBytes, st.OutputBytes, st.DroppedItems, st.CutStrings)
		}
		return string(res.Result)
	}
	e := res.Error
	var b strings.Builder
	fmt.Fprintf(&b, "The script failed with %s", e.Kind)
	if e.Line > 0 {
		fmt.Fprintf(&b, " at line %d, column %d", e.Line, e.Column)
	}
	msg := e.Message
	if e.Kind == fault.KindInternal {
		// Internal messages are generic by construction; causes stay out.
		msg = "an internal error occurred in ptc; it was not caused by the script"
	}
	if len(msg) > maxModelMessage {
		msg = msg[:maxModelMessage] + "…"
	}
	fmt.Fprintf(&b, ": %s. ", strings.TrimRight(msg, ". "))
	b.WriteString(hint(res))
	return b.String()
}

func hint(res *Result) string {
	e, l := res.Error, res.EffectiveLimits
	switch e.Kind {
	case fault.KindSyntax:
		return "Fix the syntax and try again. The script is the body of an async function: use top-level await and `return` the result; import/export and require are not available."
	case fault.KindScript:
		if e.Tool != "" {
			return fmt.Sprintf("Check the arguments and the error of tool %s; catch tool errors with try/catch (err.code, err.message) if the script can continue without it.", e.Tool)
		}
		return "Fix the script at the reported line and try again."
	case fault.KindTimeout:
		return fmt.Sprintf("The time limit is %s. Run independent tool calls concurrently with Promise.all, make fewer calls, and avoid long loops.", l.Timeout)
	case fault.KindCPULimit:
		return fmt.Sprintf("The CPU limit is %s. Do less computation in the script: avoid large loops and let tools filter data.", l.CPUTime)
	case fault.KindMemoryLimit:
		return fmt.Sprintf("The memory limit is %d bytes. Keep only the fields you need from tool results and avoid building large strings or arrays.", l.MemoryBytes)
	case fault.KindToolCallLimit:
		return fmt.Sprintf("At most %d tool calls are allowed. Make fewer calls: reuse results, filter with tool arguments, or stop earlier.", l.MaxToolCalls)
	case fault.KindOutputLimit:
		if l.MaxResultTokens > 0 && int64(l.MaxResultTokens) < l.MaxOutputBytes {
			return fmt.Sprintf("The result may be at most %d bytes of JSON and about %d tokens. Return less: aggregate, filter or summarise.", l.MaxOutputBytes, l.MaxResultTokens)
		}
		return fmt.Sprintf("The result may be at most %d bytes of JSON. Return less: aggregate, filter or summarise.", l.MaxOutputBytes)
	case fault.KindResultSchema:
		return "Return a value that matches the required result schema."
	case fault.KindCancelled:
		return "The caller cancelled the execution; there is no result."
	default:
		return "Try again; if it persists, report it to the operator."
	}
}
