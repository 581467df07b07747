package executor

import (
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/prompt"
	"github.com/ptcrun/ptc/internal/rank"
	"github.com/ptcrun/ptc/internal/tsdecl"
	"github.com/ptcrun/ptc/tools"
)

// ListTools describes the server tools a caller may use (allows, nil for
// all): all of them, the named ones, or the ones most relevant to a query;
// with TypeScript declarations when asked, the model-facing prompt (with
// the limits the caller gets by default under tenant's ceilings), and an
// approximate token count. A tool's RequiresApproval is the effective
// requirement (serverApproval): set too when the server's configuration
// requires approval for it. The in-process Runner and the server answer
// with it alike.
func (e *Executor) ListTools(q core.ToolQuery, allows func(name string) bool, tenant limits.Limits) (*core.ToolList, *fault.Error) {
	defs := e.effective(e.reg.Definitions())
	if allows != nil {
		mine := defs[:0:0]
		for _, d := range defs {
			if allows(d.Name) {
				mine = append(mine, d)
			}
		}
		defs = mine
	}
	if len(q.Names) > 0 {
		byName := make(map[string]tools.Definition, len(defs))
		for _, d := range defs {
			byName[d.Name] = d
		}
		sel := make([]tools.Definition, 0, len(q.Names))
		picked := make(map[string]bool, len(q.Names))
		for _, n := range q.Names {
			d, ok := byName[n]
			if !ok {
				return nil, fault.Reject(fault.CodeInvalidArgument, "names: unknown tool %q", core.Clip(n, core.QuotedBytes))
			}
			if picked[n] {
				continue // a repeated name lists its tool once, where it first appears
			}
			picked[n] = true
			sel = append(sel, d)
		}
		defs = sel
	}
	if q.Limit < 0 {
		return nil, fault.Reject(fault.CodeInvalidArgument, "limit is negative")
	}
	if len(q.Query) > rank.MaxQueryBytes {
		return nil, fault.Reject(fault.CodeInvalidArgument, "query is longer than %d bytes", rank.MaxQueryBytes)
	}
	out := &core.ToolList{}
	if q.Query != "" {
		byName := make(map[string]tools.Definition, len(defs))
		for _, d := range defs {
			byName[d.Name] = d
		}
		ranked := make([]tools.Definition, 0, len(defs))
		for _, m := range rank.Rank(defs, q.Query, q.Limit) {
			ranked = append(ranked, byName[m.Name])
			out.Matches = append(out.Matches, core.ToolMatch{Name: m.Name, Score: m.Score})
		}
		defs = ranked
	} else if q.Limit > 0 && q.Limit < len(defs) {
		defs = defs[:q.Limit]
	}
	out.Tools = defs
	lim := e.policy.Resolve(limits.Limits{}, tenant)
	out.Prompt = prompt.Prompt(prompt.Options{TypeScript: q.TypeScript, Python: q.Language == core.LanguagePython, Limits: lim})
	modelText := out.Prompt
	if q.TypeScript {
		ts, err := tsdecl.Generate(defs, tsdecl.Options{})
		if err != nil {
			return nil, &fault.Error{Code: fault.CodeInternal, Message: "typescript declarations: " + err.Error(), Cause: err}
		}
		out.TypeScript = ts
		modelText += ts
	} else {
		for _, d := range defs {
			modelText += d.Name + d.Description + string(d.InputSchema) + string(d.OutputSchema)
		}
	}
	out.ApproxTokens = prompt.ApproxTokens(modelText)
	return out, nil
}
