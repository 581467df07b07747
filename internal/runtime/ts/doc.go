// Package ts is the TypeScript engine: an Engine turns a TypeScript script
// into JavaScript that the goja engine (internal/runtime/js) runs, and maps positions
// in that JavaScript back to the TypeScript the caller wrote. Engine and
// NewEngine are all it exports; the rest is its own.
//
// A script, TypeScript or JavaScript, is the body of an async function:
// top-level await works and `return value` gives the result. transpile wraps
// the body in an async function expression, strips the types with esbuild
// (github.com/evanw/esbuild/pkg/api), lowers the syntax goja lacks (async
// generators, for await, using declarations, decorators, the RegExp d and v
// flags) and checks that goja parses and compiles the result. The returned
// program holds the JavaScript, a compiled goja program, and the source map
// behind program.Position and program.MapStack.
//
// Types are not checked: esbuild only removes them, so a script with a type
// error runs, and fails (or not) the way the same JavaScript would. Run tsc
// in the harness if type errors must be caught before execution.
//
// import and export are rejected with a syntaxError at their line: the
// script has no module system; it reaches the world only through the tools
// object and the input value.
//
// The lowered code relies on what goja has, plus one thing the engine must
// define: goja has no Symbol.dispose or Symbol.asyncDispose, and esbuild's
// lowered using declarations fall back to Symbol.for("Symbol.dispose") and
// Symbol.for("Symbol.asyncDispose"), so the engine should set
// Symbol.dispose and Symbol.asyncDispose to those. Named capture groups
// parse, but goja does not fill in match.groups.
//
// Some inputs make esbuild recurse deeply or run for long (deep nesting,
// many nested arrow functions). transpile refuses sources over maxNesting
// or maxArrows before calling esbuild, but that check is heuristic; call
// transpile where a runaway costs only the one execution (a worker process
// under the execution's limits), not in a shared supervisor.
//
// Line numbers are 1-based. Columns are 1-based byte offsets within the
// line, the unit goja reports, so JavaScript and TypeScript positions read
// the same way.
//
// cache keeps transpiled programs by source hash so that repeated executions
// of one script skip esbuild and the goja compiler.
//
// Deeply nested text overflows the Go stack in esbuild's parser and in
// goja's (a fatal error, not a panic): transpile refuses sources that
// internal/jsnest estimates nest more than jsnest.Max levels, and checks
// esbuild's output the same way before goja compiles it.
//
// The package imports esbuild, goja's parser and compiler,
// internal/runtime, internal/runtime/js, internal/fault and
// internal/jsnest; never the bridge's internals or gRPC.
package ts
