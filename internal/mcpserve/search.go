package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/rank"
	"github.com/ptcrun/ptc/internal/tsdecl"
	"github.com/ptcrun/ptc/tools"
)

// searchArgs are search's arguments, checked.
type searchArgs struct {
	query string
	limit int
}

// parseSearch checks search's arguments and says what to change when they
// cannot be answered.
func parseSearch(raw json.RawMessage) (searchArgs, string) {
	a := searchArgs{limit: DefaultSearchResults}
	fields, msg := argumentObject(raw, "query", "limit")
	if msg != "" {
		return a, msg
	}
	q, ok := fields["query"]
	if !ok {
		return a, `the argument "query" is missing: say in a few words what the program needs, e.g. "expenses of a team member"`
	}
	if err := json.Unmarshal(q, &a.query); err != nil {
		return a, fmt.Sprintf(`the argument "query" must be a string, not %s`, jsonKind(q))
	}
	a.query = strings.TrimSpace(a.query)
	switch {
	case a.query == "":
		return a, `the argument "query" is empty: say in a few words what the program needs`
	case len(a.query) > rank.MaxQueryBytes:
		return a, fmt.Sprintf(`the argument "query" is %d bytes, more than the %d allowed: use a few keywords`, len(a.query), rank.MaxQueryBytes)
	}
	if l, ok := fields["limit"]; ok && string(l) != "null" {
		var n float64
		if err := json.Unmarshal(l, &n); err != nil || n != float64(int(n)) {
			return a, fmt.Sprintf(`the argument "limit" must be a whole number, not %s`, jsonKind(l))
		}
		if n < 1 || n > MaxSearchResults {
			return a, fmt.Sprintf(`the argument "limit" must be between 1 and %d`, MaxSearchResults)
		}
		a.limit = int(n)
	}
	return a, ""
}

// match is one tool of search's structuredContent.
type match struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
}

// searchHandler answers search calls for one caller.
func (s *Server) searchHandler(cs *callerServer) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		start := time.Now()
		ctx = cs.caller.Bind(ctx)
		s.redescribeIfStale(cs)
		res, outcome := s.search(ctx, cs, req)
		s.log.LogAttrs(ctx, logLevel(outcome), "mcp call", logAttrs(cs, req, ToolSearch, outcome, "", start)...)
		return res, nil
	}
}

// search answers one search call: the best matches with their compact
// TypeScript declarations, as text and structuredContent, at most
// MaxSearchBytes of declarations (the least relevant matches are left out
// to stay under it, and the answer says so).
func (s *Server) search(ctx context.Context, cs *callerServer, req *sdk.CallToolRequest) (*sdk.CallToolResult, string) {
	args, msg := parseSearch(req.Params.Arguments)
	if msg != "" {
		return searchRefused(fault.CodeInvalidArgument, msg), fault.CodeInvalidArgument.String()
	}
	if s.cfg.Limit != nil {
		if err := s.cfg.Limit(ctx); err != nil {
			return searchRefused(fault.CodeResourceExhausted, err.Error()), fault.CodeResourceExhausted.String()
		}
	}
	l, ferr := s.cfg.Backend.Tools(ctx, core.ToolQuery{Query: args.query, Limit: args.limit})
	if ferr != nil {
		return searchRefused(ferr.Code, ferr.Message), ferr.Code.String()
	}
	s.mu.Lock()
	total := cs.describedTools
	s.mu.Unlock()
	defs := l.Tools
	var decls string
	for len(defs) > 0 {
		ts, err := tsdecl.Generate(defs, tsdecl.Options{Compact: true, MaxBytes: MaxSearchBytes})
		if err == nil {
			decls = ts
			break
		}
		defs = defs[:len(defs)/2]
	}
	matches := make([]match, len(defs))
	for i, d := range defs {
		matches[i] = match{Name: d.Name, Description: d.Description}
		if i < len(l.Matches) {
			matches[i].Score = l.Matches[i].Score
		}
	}
	var b strings.Builder
	switch {
	case len(l.Tools) == 0:
		fmt.Fprintf(&b, "No tool matches %q. Try other words", args.query)
		if all, ferr := s.cfg.Backend.Tools(ctx, core.ToolQuery{}); ferr == nil && len(all.Tools) > 0 {
			b.WriteString("; the tools are:\n")
			b.WriteString(toolIndex(all.Tools, DefaultDescriptionBytes/2))
		} else {
			b.WriteString(".\n")
		}
	case len(defs) == 0:
		fmt.Fprintf(&b, "The tools that best match %q cannot be declared in TypeScript (their schemas are too large or invalid): %s. Call them as tools.<name>(args) and catch ToolArgumentError to learn their arguments, or use `await tools.$describe(name)` in a program.", args.query, names(l.Tools))
	case len(defs) == 1:
		fmt.Fprintf(&b, "The tool (of %d) that best matches %q: %s.", total, args.query, defs[0].Name)
	default:
		fmt.Fprintf(&b, "The %d tools (of %d) that best match %q, most relevant first: %s.", len(defs), total, args.query, names(defs))
	}
	if len(defs) > 0 {
		if left := len(l.Tools) - len(defs); left > 0 {
			fmt.Fprintf(&b, " %d more matched but their declarations do not fit in one answer: narrow the query.", left)
		}
		if len(defs) == 1 {
			b.WriteString(" Call it in execute's programs as declared:\n\n")
		} else {
			b.WriteString(" Call them in execute's programs as declared:\n\n")
		}
		b.WriteString(decls)
	}
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: b.String()}},
		StructuredContent: map[string]any{"tools": matches, "typescript": decls},
	}, "ok"
}

// names joins tool names for a sentence.
func names(defs []tools.Definition) string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return strings.Join(out, ", ")
}

// searchRefused is a search that could not be answered.
func searchRefused(code fault.Code, msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "search failed: " + msg}},
		StructuredContent: map[string]any{"error": failure{Code: code.String(), Message: msg}}}
}
