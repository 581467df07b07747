package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/plural"
	"github.com/ptcrun/ptc/internal/prompt"
	"github.com/ptcrun/ptc/internal/tsdecl"
	"github.com/ptcrun/ptc/tools"
)

// Tool names.
const (
	ToolSearch  = "search"
	ToolExecute = "execute"
)

// protocolVersions are the MCP revisions ptc speaks: those with the
// initialize handshake, where a server may send requests (elicitation) and
// notifications (progress) while it handles a call. The 2026-07-28
// revision replaces those with multi round-trip results, which would need
// an execution to be parked between calls; see docs/RATIONALE.md.
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// instructions are the server's instructions at initialization.
const instructions = "ptc runs programs that call tools. Write one program that makes all the calls a task needs and returns only the answer, and run it with execute; its description states the contract and declares the tools (or use search to find them)."

// executeSchema is the input schema of execute.
var executeSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"code":{"type":"string","description":"The program: the body of an async function; await tool calls and return the result."},` +
	`"input":{"description":"Optional JSON value the program reads as input."},` +
	`"language":{"type":"string","enum":["javascript","typescript","python"],"description":"Default javascript. A python program is the body of an async function too: await tools.name(key=value), return the result."}},` +
	`"required":["code"],"additionalProperties":false}`)

// executeOutputSchema is the shape of execute's structuredContent.
var executeOutputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"result":{"description":"The value the program returned."},` +
	`"error":{"type":"object","description":"Why the program failed or did not run."}}}`)

// searchSchema is the input schema of search.
var searchSchema = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
	`"query":{"type":"string","description":"What the program needs to do, in a few words."},`+
	`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"Most tools to return; default %d."}},`+
	`"required":["query"],"additionalProperties":false}`, MaxSearchResults, DefaultSearchResults))

// executeTool and searchTool are the two tools with the given descriptions.
func executeTool(desc string) *sdk.Tool {
	return &sdk.Tool{Name: ToolExecute, Description: desc, InputSchema: executeSchema, OutputSchema: executeOutputSchema}
}

func searchTool(desc string) *sdk.Tool {
	f := false
	return &sdk.Tool{Name: ToolSearch, Description: desc, InputSchema: searchSchema,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &f}}
}

// descriptions of one caller's search and execute tools.
type descriptions struct {
	execute, search string
	// tools is the number of tools the caller may use.
	tools int
	// failed reports that the backend could not list the tools (the
	// descriptions point to search; the next call tries again).
	failed bool
}

// descriptions describes the two tools for the caller ctx carries: the
// script contract (with the caller's limits) and, while they fit in
// DescriptionBytes, the compact TypeScript declarations of every tool;
// past that, the tools' names and a pointer to search.
func (s *Server) descriptions(ctx context.Context) descriptions {
	l, ferr := s.cfg.Backend.Tools(ctx, core.ToolQuery{})
	if ferr != nil {
		s.log.Error("mcp: listing the tools for the descriptions failed; the next call tries again", "err", ferr)
		l = &core.ToolList{Prompt: prompt.Prompt(prompt.Options{})}
	}
	n := len(l.Tools)
	var b strings.Builder
	b.WriteString("Runs a JavaScript program (TypeScript with language \"typescript\") in ptc's sandbox and returns only its result, so one program can make many tool calls and keep your context small.\n\n")
	b.WriteString(l.Prompt)
	decls, inline := "", false
	if s.cfg.DescriptionBytes > 0 && n > 0 {
		ts, err := tsdecl.Generate(l.Tools, tsdecl.Options{Compact: true, MaxBytes: s.cfg.DescriptionBytes})
		if err == nil {
			decls, inline = ts, true
		}
	}
	switch {
	case ferr != nil:
	case n == 0:
		b.WriteString("\nNo tools are available to you: programs can only compute.\n")
	case inline:
		if n == 1 {
			b.WriteString("\nThe one tool, declared in TypeScript:\n\n")
		} else {
			fmt.Fprintf(&b, "\nThe %d tools, declared in TypeScript:\n\n", n)
		}
		b.WriteString(decls)
	default:
		fmt.Fprintf(&b, "\n%s available; their declarations are too long to list here. Call search with a few words of what the program needs to get the declarations of the matching tools, or search inside the program with `await tools.$search(query)` and `await tools.$describe(name)`.\n", plural.Count(n, "tool is", "tools are"))
		b.WriteString(toolIndex(l.Tools, max(s.cfg.DescriptionBytes, DefaultDescriptionBytes)/2))
	}
	search := fmt.Sprintf("Finds tools for execute's programs: ranks the %s available to you by relevance to a query (their names, descriptions and arguments) and returns the best matches with their TypeScript declarations.", plural.Count(n, "tool", "tools"))
	if inline {
		search += " Every tool is already declared in execute's description."
	}
	if ferr != nil {
		return descriptions{execute: b.String() + "\nThe tool list is unavailable right now: call search to see the tools.\n", search: search, failed: true}
	}
	return descriptions{execute: b.String(), search: search, tools: n}
}

// toolIndex lists tool names by namespace (the first segment of a dotted
// name) in at most budget bytes: every name while they fit, else the
// namespaces with their counts.
func toolIndex(defs []tools.Definition, budget int) string {
	groups := map[string][]string{}
	var order []string
	for _, d := range defs {
		ns, rest, ok := strings.Cut(d.Name, ".")
		if !ok {
			ns, rest = "", d.Name
		}
		if _, seen := groups[ns]; !seen {
			order = append(order, ns)
		}
		groups[ns] = append(groups[ns], rest)
	}
	sort.Strings(order)
	var full strings.Builder
	full.WriteString("Tools:\n")
	for _, ns := range order {
		names := groups[ns]
		sort.Strings(names)
		if ns == "" {
			full.WriteString("- " + strings.Join(names, ", ") + "\n")
			continue
		}
		fmt.Fprintf(&full, "- %s: %s\n", ns, strings.Join(names, ", "))
	}
	if full.Len() <= budget {
		return full.String()
	}
	var short strings.Builder
	short.WriteString("Namespaces (tools.<namespace>.<tool>):\n")
	for i, ns := range order {
		line := fmt.Sprintf("- %s (%s)\n", ns, plural.Count(len(groups[ns]), "tool", "tools"))
		if ns == "" {
			line = fmt.Sprintf("- %s outside namespaces\n", plural.Count(len(groups[ns]), "tool", "tools"))
		}
		if short.Len()+len(line) > budget {
			fmt.Fprintf(&short, "- … and %s\n", plural.Count(len(order)-i, "more namespace", "more namespaces"))
			break
		}
		short.WriteString(line)
	}
	return short.String()
}
