package mcpserve

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/core"
)

// MaxApprovalArgumentBytes bounds the arguments quoted in an approval
// question.
const MaxApprovalArgumentBytes = 1000

// approvalSchema is the form an approval question asks for: one boolean,
// false unless the user sets it. It is not required, so that a form
// submitted untouched comes back as the default, a denial, and not as an
// answer the SDK refuses.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Allow this call","default":false}}}`)

// The reasons of denials the user did not word (the program sees them as
// the message of its rejected call).
const (
	reasonNotAllowed = "the user did not allow the call"
	reasonDeclined   = "the user declined the call"
	reasonDismissed  = "the user dismissed the approval request"
	reasonEnded      = "the execution ended while waiting for approval"
	reasonClientErr  = "the MCP client could not ask its user for approval (it answered the request with an error); the call is denied"
	reasonNoAnswer   = "the MCP client went away before answering the approval request; the call is denied"
	reasonAmbiguous  = "the answer to the approval request named a field twice, so it was not a clear yes; the call is denied"
	reasonUnclear    = "the answer to the approval request was not a clear yes (approve must be the boolean true, and nothing else may be set); the call is denied"
)

// newElicitor returns the approver of one execute call on session ss
// (core.Request.Approve): a call that needs approval is put to the MCP
// client's user through elicitation, one question at a time; a client
// that did not declare form elicitation cannot be asked, and the call is
// denied with the reason. The decision's reason is what the program sees
// in the rejected call's message.
//
// Only an unambiguous yes runs the call (decision): every other answer,
// and every failure to get one, denies it.
func newElicitor(ss *sdk.ServerSession) core.Approver {
	var mu sync.Mutex
	return func(ctx context.Context, a core.Action) (bool, string) {
		if !supportsElicitation(ss) {
			return false, fmt.Sprintf("tool %s needs approval and this MCP client cannot ask for it (it does not support elicitation); ask the operator, or use a client that supports elicitation", a.Tool)
		}
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return false, reasonEnded
		}
		res, err := ss.Elicit(ctx, &sdk.ElicitParams{Message: approvalMessage(a), RequestedSchema: approvalSchema})
		if err != nil {
			return false, failedReason(ctx, err)
		}
		return decision(res)
	}
}

// decision turns the user's answer into an approval: only the action
// "accept" with content {"approve": true} (the boolean, and no other
// field) approves. An untouched form (no content, or approve false)
// denies in plain words; any other content is not a clear yes.
func decision(res *sdk.ElicitResult) (bool, string) {
	if res == nil {
		return false, reasonUnclear
	}
	switch res.Action {
	case "accept":
	case "decline":
		return false, reasonDeclined
	default:
		return false, reasonDismissed
	}
	v, set := res.Content["approve"]
	switch {
	case len(res.Content) == 0, len(res.Content) == 1 && v == false:
		return false, reasonNotAllowed
	case len(res.Content) == 1 && set && v == true:
		return true, ""
	default:
		return false, reasonUnclear
	}
}

// failedReason says why no answer came, without the transport's or the
// SDK's own words: the execution ended, the client answered with an
// error, the client went away, or its answer did not fit the form (the
// SDK checks it against approvalSchema), or it named a field twice (the
// transport replaced it with a codeAmbiguousAnswer error).
func failedReason(ctx context.Context, err error) string {
	var werr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return reasonEnded
	case errors.As(err, &werr) && werr.Code == codeAmbiguousAnswer:
		return reasonAmbiguous
	case errors.As(err, &werr):
		return reasonClientErr
	case errors.Is(err, sdk.ErrConnectionClosed), errors.Is(err, io.EOF):
		return reasonNoAnswer
	default:
		return reasonUnclear
	}
}

// approvalMessage is the question about a: the tool, its arguments and
// why approval is needed. Arguments longer than MaxApprovalArgumentBytes
// are cut, and the message says so, with their full size and the SHA-256
// of the full arguments JSON; control and invisible formatting characters
// (bidi overrides such as U+202E, zero-width characters) are shown as
// JSON escapes, so that what the user reads is what the tool receives.
func approvalMessage(a core.Action) string {
	var msg string
	if len(a.Arguments) > MaxApprovalArgumentBytes {
		sum := sha256.Sum256(a.Arguments)
		msg = fmt.Sprintf("A program run by ptc wants to call %s with arguments of %d bytes, too long to show in full: "+
			"the first %d bytes are shown, then \"[cut]\" (SHA-256 of the full arguments JSON: %x): %s[cut].",
			visible(a.Tool), len(a.Arguments), MaxApprovalArgumentBytes, sum, visible(cutBytes(string(a.Arguments), MaxApprovalArgumentBytes)))
	} else {
		msg = fmt.Sprintf("A program run by ptc wants to call %s with %s.", visible(a.Tool), visible(string(a.Arguments)))
	}
	if a.Reason != "" {
		msg += " Approval is required: " + visible(a.Reason) + "."
	}
	return msg + " Allow this call?"
}

// cutBytes shortens s to at most n bytes, on a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// visible writes the characters of s a reader could not see, or that
// would reorder what follows (controls, bidi and other format characters,
// line and paragraph separators), as JSON escapes (\u202e); an invalid
// UTF-8 byte becomes \ufffd.
func visible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\ufffd`)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.In(r, unicode.Zl, unicode.Zp):
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// supportsElicitation reports whether the session's client declared the
// elicitation capability.
func supportsElicitation(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	// Neither mode declared means form (the capability before modes).
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}
