// Package mcp turns the tools of a Model Context Protocol server into ptc
// tools. A Source connects to one server, over stdio (a command ptcd starts)
// or streamable HTTP (a URL), through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// The server's tools/list becomes tools named "<source>.<tool>", so a script
// calls tools.everything.echo({message: "hi"}); an allow list and a deny
// list pick which tools are offered. Each tool keeps the server's
// inputSchema and outputSchema. A tool whose name ptc cannot use (see
// tools.ValidateName) or whose schema does not compile is skipped and
// logged, and at most Config.MaxTools tools are read.
//
// A call's result maps to JSON: structuredContent when the server sends it;
// otherwise one text block parsed as JSON when it parses, else the text as
// a JSON string; several blocks, or blocks that are not text, become the
// document {"content": [...]} holding the blocks as the server sent them. A
// result with isError becomes a *tools.Error with code "tool_error". The
// execution's idempotency key travels in the request's _meta as
// "ptc/idempotency_key".
//
// A Source reconnects with exponential backoff when its server dies or its
// connection breaks, and re-reads the tool list on
// notifications/tools/list_changed. The registry owner reads the current
// tool set with Tools and learns of changes through OnChange. A server that
// cannot be reached at start-up fails Start when the source is required;
// otherwise the source starts unavailable, keeps trying, and its calls
// answer a *tools.Error with code "unavailable" (marked transient, so a
// policy with retries tries again).
//
// Each tools/call is an OpenTelemetry client span ("tools/call echo"); its
// W3C trace context travels in the request's _meta as "traceparent" and
// "tracestate" (the MCP convention), and over streamable HTTP also in the
// request's headers, so the server's spans join the caller's trace.
//
// Package mcp imports packages tools and tools/policy, never an engine, and
// the OpenTelemetry API.
package mcp
