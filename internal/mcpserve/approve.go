package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/core"
)

// MaxApprovalArgumentBytes bounds the arguments quoted in an approval
// question.
const MaxApprovalArgumentBytes = 1000

// approvalSchema is the form an approval question asks for: one boolean.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Allow this call","default":true}},"required":["approve"]}`)

// newElicitor returns the approver of one execute call on session ss
// (core.Request.Approve): a call that needs approval is put to the MCP
// client's user through elicitation, one question at a time; a client
// that did not declare elicitation cannot be asked, and the call is
// denied with the reason. The decision's reason is what the program sees
// in the rejected call's message.
func newElicitor(ss *sdk.ServerSession) core.Approver {
	var mu sync.Mutex
	return func(ctx context.Context, a core.Action) (bool, string) {
		if !supportsElicitation(ss) {
			return false, fmt.Sprintf("tool %s needs approval and this MCP client cannot ask for it (it does not support elicitation); ask the operator, or use a client that supports elicitation", a.Tool)
		}
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return false, "the execution ended while waiting for approval"
		}
		res, err := ss.Elicit(ctx, &sdk.ElicitParams{Message: approvalMessage(a), RequestedSchema: approvalSchema})
		switch {
		case err != nil && ctx.Err() != nil:
			return false, "the execution ended while waiting for approval"
		case err != nil:
			return false, "asking for approval failed: " + err.Error()
		case res.Action == "accept":
			if v, ok := res.Content["approve"].(bool); ok && !v {
				return false, "the user did not allow the call"
			}
			return true, ""
		case res.Action == "decline":
			return false, "the user declined the call"
		default:
			return false, "the user dismissed the approval request"
		}
	}
}

// approvalMessage is the question about a: the tool, its arguments (cut
// to MaxApprovalArgumentBytes) and why approval is needed.
func approvalMessage(a core.Action) string {
	msg := fmt.Sprintf("A program run by ptc wants to call %s with %s.", a.Tool, truncate(string(a.Arguments), MaxApprovalArgumentBytes))
	if a.Reason != "" {
		msg += " Approval is required: " + a.Reason + "."
	}
	return msg + " Allow this call?"
}

// supportsElicitation reports whether the session's client declared the
// elicitation capability.
func supportsElicitation(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}
