package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approval is a tool call that needs a person's decision before it runs.
type Approval struct {
	// Tool is the tool the program calls, Arguments its (validated)
	// arguments.
	Tool      string
	Arguments json.RawMessage
	// Reason says why the call needs approval (the operator's policy).
	Reason string
}

// Decision answers an Approval. A denial's Reason is what the program sees
// in the rejected call's message.
type Decision struct {
	Approved bool
	Reason   string
}

// Approver decides Approvals. It may block (a person answers) until ctx
// ends.
type Approver func(ctx context.Context, a Approval) Decision

type approverKey struct{}

// withApprover returns ctx carrying a.
func withApprover(ctx context.Context, a Approver) context.Context {
	return context.WithValue(ctx, approverKey{}, a)
}

// ApproverFrom returns the Approver of the execute call ctx belongs to: it
// asks the MCP client through elicitation when the client supports it, and
// denies with a reason when it does not. Outside an execute call it denies
// every approval.
func ApproverFrom(ctx context.Context) Approver {
	if a, ok := ctx.Value(approverKey{}).(Approver); ok && a != nil {
		return a
	}
	return func(_ context.Context, a Approval) Decision {
		return Decision{Reason: fmt.Sprintf("tool %s needs approval and nobody can be asked for it", a.Tool)}
	}
}

// MaxApprovalArgumentBytes bounds the arguments quoted in an approval
// question.
const MaxApprovalArgumentBytes = 1000

// approvalSchema is the form an approval question asks for: one boolean.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Allow this call","default":true}},"required":["approve"]}`)

// newElicitor returns the Approver of one execute call on session ss:
// questions go to the client one at a time.
func newElicitor(ss *sdk.ServerSession) Approver {
	var mu sync.Mutex
	return func(ctx context.Context, a Approval) Decision {
		if !supportsElicitation(ss) {
			return Decision{Reason: fmt.Sprintf("tool %s needs approval and this MCP client cannot ask for it (it does not support elicitation); ask the operator, or use a client that supports elicitation", a.Tool)}
		}
		mu.Lock()
		defer mu.Unlock()
		msg := fmt.Sprintf("A program run by ptc wants to call %s with %s.", a.Tool, truncate(string(a.Arguments), MaxApprovalArgumentBytes))
		if a.Reason != "" {
			msg += " Approval is required: " + a.Reason + "."
		}
		msg += " Allow this call?"
		res, err := ss.Elicit(ctx, &sdk.ElicitParams{Message: msg, RequestedSchema: approvalSchema})
		switch {
		case err != nil && ctx.Err() != nil:
			return Decision{Reason: "the execution ended while waiting for approval"}
		case err != nil:
			return Decision{Reason: "asking for approval failed: " + err.Error()}
		case res.Action == "accept":
			if v, ok := res.Content["approve"].(bool); ok && !v {
				return Decision{Reason: "the user did not allow the call"}
			}
			return Decision{Approved: true}
		case res.Action == "decline":
			return Decision{Reason: "the user declined the call"}
		default:
			return Decision{Reason: "the user dismissed the approval request"}
		}
	}
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
