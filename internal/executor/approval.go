package executor

import "github.com/ptcrun/ptc/tools"

// Why a server tool's calls need approval, whoever asks.
const (
	whyDefinition = "its definition requires approval"
	whyConfig     = "the server's configuration requires approval for it"
)

// serverApproval reports whether every call of the server tool d needs
// approval, and why: its definition says so (an MCP source's approval
// policy sets it there), or the operator's rules (Config.Approve) do.
// Executions (approvalsOf) and tool listings (ListTools) both ask it, so
// what a caller is told in advance is what an execution enforces.
func (e *Executor) serverApproval(d tools.Definition) (string, bool) {
	switch {
	case d.RequiresApproval:
		return whyDefinition, true
	case e.approve != nil && e.approve(d.Name):
		return whyConfig, true
	}
	return "", false
}

// effective is defs as callers see them: RequiresApproval set on every
// tool whose calls need approval (serverApproval). defs is not modified.
func (e *Executor) effective(defs []tools.Definition) []tools.Definition {
	if e.approve == nil {
		return defs
	}
	out := make([]tools.Definition, len(defs))
	for i, d := range defs {
		_, d.RequiresApproval = e.serverApproval(d)
		out[i] = d
	}
	return out
}
