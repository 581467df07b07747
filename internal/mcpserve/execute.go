package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
)

// executeArgs are execute's arguments, checked.
type executeArgs struct {
	code     string
	input    json.RawMessage
	language core.Language
}

// parseExecute checks execute's arguments and says what to change when
// they cannot run.
func parseExecute(raw json.RawMessage, maxCode int) (executeArgs, string) {
	var a executeArgs
	fields, msg := argumentObject(raw, "code", "input", "language")
	if msg != "" {
		return a, msg
	}
	code, ok := fields["code"]
	if !ok {
		return a, `the argument "code" is missing: pass the program's source as a string`
	}
	if err := json.Unmarshal(code, &a.code); err != nil {
		return a, fmt.Sprintf(`the argument "code" must be a string holding the program's source, not %s`, jsonKind(code))
	}
	switch {
	case strings.TrimSpace(a.code) == "":
		return a, `the argument "code" is empty: pass the program's source, ending with return <value>`
	case len(a.code) > maxCode:
		return a, fmt.Sprintf(`the argument "code" is %d bytes, more than the %d allowed: write a shorter program and let the tools do the work`, len(a.code), maxCode)
	case !utf8.ValidString(a.code):
		return a, `the argument "code" is not valid UTF-8`
	}
	a.language = core.LanguageJavaScript
	if l, ok := fields["language"]; ok && string(l) != "null" {
		var name string
		if err := json.Unmarshal(l, &name); err != nil {
			return a, fmt.Sprintf(`the argument "language" must be "javascript", "typescript" or "python", not %s`, jsonKind(l))
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "javascript", "js":
			a.language = core.LanguageJavaScript
		case "typescript", "ts":
			a.language = core.LanguageTypeScript
		case "python", "py":
			a.language = core.LanguagePython
		default:
			return a, fmt.Sprintf(`the language %q is not supported: use "javascript", "typescript" or "python"`, core.Clip(name, 40))
		}
	}
	if in, ok := fields["input"]; ok && string(in) != "null" {
		a.input = in
	}
	return a, ""
}

// argumentObject splits a tool's arguments into fields, refusing anything
// but a JSON object of the allowed names.
func argumentObject(raw json.RawMessage, allowed ...string) (map[string]json.RawMessage, string) {
	want := strings.Join(allowed[:len(allowed)-1], ", ") + " and " + allowed[len(allowed)-1]
	if len(allowed) == 1 {
		want = allowed[0]
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]json.RawMessage{}, ""
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Sprintf("the arguments must be a JSON object with %s, not %s", want, jsonKind(raw))
	}
	for k := range fields {
		if !slices.Contains(allowed, k) {
			return nil, fmt.Sprintf("unknown argument %q: the arguments are %s", core.Clip(k, 40), want)
		}
	}
	return fields, ""
}

// jsonKind names the JSON type of a value for a message.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// executeHandler runs execute calls for one caller.
func (s *Server) executeHandler(cs *callerServer) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		start := time.Now()
		ctx = cs.caller.Bind(ctx)
		s.redescribeIfStale(cs)
		res, outcome, id := s.execute(ctx, req)
		s.log.LogAttrs(ctx, logLevel(outcome), "mcp call", logAttrs(cs, req, ToolExecute, outcome, id, start)...)
		return res, nil
	}
}

// execute runs one execute call; outcome and id are for the log.
func (s *Server) execute(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, outcome, id string) {
	args, msg := parseExecute(req.Params.Arguments, s.cfg.MaxCodeBytes)
	if msg != "" {
		return refused(fault.CodeInvalidArgument, msg), fault.CodeInvalidArgument.String(), ""
	}
	if err := s.begin(); err != nil {
		return refused(fault.CodeUnavailable, err.Error()), fault.CodeUnavailable.String(), ""
	}
	defer s.end()
	if s.cfg.Limit != nil {
		if err := s.cfg.Limit(ctx); err != nil {
			return refused(fault.CodeResourceExhausted, err.Error()), fault.CodeResourceExhausted.String(), ""
		}
	}
	creq := core.Request{Script: core.Script{Language: args.language, Source: args.code}, Input: args.input}
	var rep *reporter
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		rep = newReporter(ctx, req.Session, token)
		creq.Observer = rep
	}
	// Calls that need approval (docs/durable.md) are put to the MCP
	// client's user through elicitation.
	creq.Approve = newElicitor(req.Session)
	r, ferr := s.cfg.Backend.Run(ctx, creq)
	if rep != nil {
		rep.stop()
	}
	if ferr != nil {
		return refused(ferr.Code, ferr.Message), ferr.Code.String(), ""
	}
	outcome = "ok"
	if r.Error != nil {
		outcome = r.Error.Kind.String()
	}
	return renderResult(r), outcome, r.ExecutionID
}
