// Package mcpserve serves ptc as a Model Context Protocol server: "code
// mode" for any MCP client. Instead of one MCP tool per upstream tool, a
// client sees two:
//
//   - search: a query ranks the tools a caller may use and returns the
//     most relevant ones (at most MaxSearchResults) with their TypeScript
//     declarations;
//   - execute: runs a program (code, optional input, optional language)
//     against every tool the caller may use — Go tools, MCP servers and
//     HTTP endpoints alike — and returns only the program's result. Its
//     description carries the script contract and compact TypeScript
//     declarations of the tools while they fit in Config.DescriptionBytes;
//     past that it names the tools and points to search.
//
// A result is structuredContent ({"result": …}) plus its JSON as text; a
// program that fails is isError with the model-facing message and
// {"error": …}; stats, logs, the execution id and a bounded trace travel in
// _meta (keys "ptc/…"). Arguments that cannot run — missing or non-string
// code, oversized code, an unknown language or argument — are isError with
// a message that says what to change; the session keeps serving.
//
// When the client sends a progress token, each tool call of the program is
// reported as it starts and ends (notifications/progress; the execution's
// core.CallObserver), without ever blocking the program. A tool call that needs a person's approval is
// asked through elicitation when the client supports it and is denied with
// a reason otherwise (see Approval).
//
// The same Server answers over stdio (Run, `ptc mcp`) and streamable HTTP
// (Handler, ptcd's mcp listener). Over HTTP every request authenticates
// (HTTPConfig.Authenticate: ptcd uses its bearer tokens and tenants); each
// caller identity gets its own MCP server, so descriptions show only that
// caller's tools, and a session answers only the identity that opened it.
//
// The Backend runs executions and answers tool queries for the caller a
// context carries: internal/server in ptcd and `ptc mcp`, a ptc.Client
// when `ptc mcp --server` fronts a running ptcd. Package mcpserve imports
// the request model, tsdecl and the MCP SDK; never the executor, the
// server, the root package or gRPC.
package mcpserve
