package tools

// Tool error codes that ptc itself gives a failed call: err.code in a
// script, ToolCallRecord.error_code in the trace, the code of a WASM
// guest's error and of a Session ToolResult. A handler may return codes of
// its own (with *Error); these are the ones every layer shares.
const (
	// CodeUnknownTool: the script called a name that is not one of its tools.
	CodeUnknownTool = "unknown_tool"
	// CodeInvalidArguments: the arguments failed the tool's input schema
	// (or could not be converted to JSON); the tool was not called.
	CodeInvalidArguments = "invalid_arguments"
	// CodeCallLimit: the call was refused because the execution used up
	// its max_tool_calls (or a tool's own per-execution cap).
	CodeCallLimit = "tool_call_limit"
	// CodeToolFailed: the tool failed with an error that has no code.
	CodeToolFailed = "tool_failed"
	// CodeInvalidOutput: the tool's result is not JSON or failed its output
	// schema.
	CodeInvalidOutput = "invalid_output"
	// CodeCancelled: the execution was cancelled during the call.
	CodeCancelled = "cancelled"
	// CodeTimeout: the execution's (or the tool's) time ran out during the
	// call.
	CodeTimeout = "timeout"
	// CodePanic: the handler panicked.
	CodePanic = "tool_panic"
	// CodeClientGone: a client tool call that can no longer be answered
	// because the Session client half-closed or broke its stream. It is
	// the same code as CodeCancelled: for the script, the call was
	// cancelled.
	CodeClientGone = CodeCancelled
	// CodeDenied: the call needed approval and was denied (or nobody could
	// be asked); the tool did not run. The error's message holds the
	// reason.
	CodeDenied = "denied"
)
