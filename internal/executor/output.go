package executor

import (
	"encoding/json"
	"errors"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/prompt"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/truncate"
)

// MaxUntruncatedBytes bounds the result an engine may produce for the
// overflow policy truncate to cut down (the largest tool result, and what a
// worker frame carries).
const MaxUntruncatedBytes = 64 << 20

// engineLimits are the limits an engine runs under: the effective limits,
// except that with the overflow policy truncate the result may be up to
// MaxUntruncatedBytes (fitOutput cuts it to the effective limit after).
func engineLimits(l limits.Limits, overflow core.OverflowPolicy) limits.Limits {
	if overflow == core.OverflowTruncate && l.MaxOutputBytes > 0 && l.MaxOutputBytes < MaxUntruncatedBytes {
		l.MaxOutputBytes = MaxUntruncatedBytes
	}
	return l
}

// fitOutput applies the output limits to an engine's outcome: it enforces
// max_result_tokens (the engine enforced max_output_bytes) or, with the
// overflow policy truncate, cuts the result to both limits and records the
// truncation in st.
func fitOutput(out *runtime.Outcome, l limits.Limits, overflow core.OverflowPolicy, st *core.Stats) {
	truncating := overflow == core.OverflowTruncate
	if out.Err != nil {
		if truncating && out.Err.Kind == fault.KindOutputLimit {
			// The engine's bound was MaxUntruncatedBytes.
			observed := out.Err.Observed
			out.Err = fault.Breach(fault.KindOutputLimit, l.MaxOutputBytes, observed,
				"the result is more than the %d bytes of JSON that can be truncated; return less (aggregate, filter or summarise)", MaxUntruncatedBytes)
		}
		return
	}
	res := out.Result
	maxTokens := int(l.MaxResultTokens)
	// A text never has more tokens than bytes: only a result longer than
	// the token limit needs counting.
	overTokens := maxTokens > 0 && len(res) > maxTokens && prompt.ApproxTokens(string(res)) > maxTokens
	if !truncating {
		if overTokens {
			n := prompt.ApproxTokens(string(res))
			out.Err = fault.Breach(fault.KindOutputLimit, int64(maxTokens), int64(n),
				"the result is about %d tokens of JSON, more than the %d allowed (max_result_tokens); return less (aggregate, filter or summarise)", n, maxTokens)
			out.Result = nil
		}
		return
	}
	overBytes := l.MaxOutputBytes > 0 && int64(len(res)) > l.MaxOutputBytes
	if !overBytes && !overTokens {
		return
	}
	cut, rep, err := truncate.Fit(res, int(l.MaxOutputBytes), maxTokens, prompt.ApproxTokens)
	if err != nil {
		var tl *truncate.TooLargeError
		var tm *truncate.TooManyValuesError
		switch {
		case errors.As(err, &tm):
			limit, observed := l.MaxOutputBytes, int64(len(res))
			if !overBytes {
				limit, observed = int64(maxTokens), int64(prompt.ApproxTokens(string(res)))
			}
			out.Err = fault.Breach(fault.KindOutputLimit, limit, observed,
				"the result is %d bytes of JSON with more than %d values, more than the overflow policy truncate cuts down; return less (aggregate, filter or summarise, fewer than %d values) or raise max_output_bytes / max_result_tokens until it fits whole",
				len(res), tm.Max, tm.Max)
		case errors.As(err, &tl) && tl.SmallestBytes > int(l.MaxOutputBytes) && l.MaxOutputBytes > 0:
			out.Err = fault.Breach(fault.KindOutputLimit, l.MaxOutputBytes, int64(len(res)),
				"the result is %d bytes of JSON and cannot be truncated to the %d allowed: its smallest truncated form is %d bytes; return less (aggregate, filter or summarise) or raise max_output_bytes",
				len(res), l.MaxOutputBytes, tl.SmallestBytes)
		case errors.As(err, &tl):
			n := prompt.ApproxTokens(string(res))
			out.Err = fault.Breach(fault.KindOutputLimit, int64(maxTokens), int64(n),
				"the result is about %d tokens of JSON and cannot be truncated to the %d allowed (max_result_tokens): its smallest truncated form is about %d tokens; return less (aggregate, filter or summarise)",
				n, maxTokens, tl.SmallestTokens)
		default:
			out.Err = fault.Wrap(fault.KindInternal, err, "internal error")
		}
		out.Result = nil
		return
	}
	st.ResultTruncated = true
	st.UntruncatedOutputBytes = int64(len(res))
	st.DroppedItems, st.CutStrings = rep.DroppedItems, rep.CutStrings
	out.Result = json.RawMessage(cut)
}
