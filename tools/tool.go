package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
)

// Definition describes a tool to scripts, to models and to validators.
type Definition struct {
	// Name is how scripts call the tool: tools.<Name>(args). Dots make
	// namespaces: "github.search_issues" is tools.github.search_issues.
	Name string `json:"name"`
	// Description is shown to models and in listings.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the arguments. Empty means any
	// JSON object.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// OutputSchema, when set, is the JSON Schema every result must match.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// RequiresApproval makes every call of the tool wait for its caller's
	// approval before it runs (a resumable execution pauses; a Session
	// asks; a Go caller's approval callback decides); a call nobody can
	// approve is denied. It applies to server tools.
	RequiresApproval bool `json:"requires_approval,omitempty"`
}

// Call is one invocation of a tool, as its handler sees it.
type Call struct {
	// ExecutionID identifies the execution that makes the call.
	ExecutionID string
	// Seq is the 1-based order of the call within its execution.
	Seq int32
	// IdempotencyKey is "<execution_id>/<seq>": a handler with side
	// effects can use it to deduplicate retries.
	IdempotencyKey string
	// Tool is the name that was called.
	Tool string
	// Arguments is the JSON arguments object, already validated against
	// the input schema.
	Arguments json.RawMessage
}

// Handler runs a tool call. It returns the result as JSON, or an error; an
// *Error gives the script a stable code, any other error becomes code
// "tool_failed". Handlers must honour ctx: it is cancelled when the
// execution ends or times out.
type Handler func(ctx context.Context, call Call) (json.RawMessage, error)

// Tool is a definition bound to its handler.
type Tool struct {
	Definition
	Handler Handler
	// TrustOutput skips the per-call check of results against the output
	// schema (JSON validity included). Set it only for in-process Go
	// handlers whose tests show every result matches the schema; tools
	// from untrusted sources (client-served, MCP, HTTP) never set it.
	TrustOutput bool
	// Inline declares that the handler returns quickly and honours ctx, so
	// whoever dispatches a call to it may run it on the goroutine that is
	// waiting for it instead of handing it to a new one: in a Runner, the
	// script's own goroutine when the script waits for nothing else (in
	// worker processes too: the flag travels in the tool manifest); in
	// Client.Run, the stream's goroutine (calls to it are then served one
	// at a time). That saves the hand-off, most of the cost of a fast call.
	// While an inline call runs, the script's timeout is seen only through
	// ctx.
	Inline bool
}

// Error is a tool failure with a stable code that scripts can branch on
// (err.code) and a message a model can read.
type Error struct {
	Code    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// nameRE: dot-separated identifiers usable as JavaScript property names.
var nameRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*(\.[A-Za-z_$][A-Za-z0-9_$-]*)*$`)

// Bounds the package enforces.
const (
	// MaxNameLength bounds a tool name.
	MaxNameLength = 128
	// MaxSchemaBytes bounds the size of one JSON Schema document.
	MaxSchemaBytes = 1 << 20
	// MaxViolations bounds how many violations one validation reports.
	MaxViolations = 20
)

// ValidateName reports whether name can be a tool name: dot-separated
// segments of letters, digits, '_', '$' and '-', not starting with a digit,
// none starting with '$' (reserved for ptc's own helpers).
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("tool name is empty")
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("tool name %.40q... is longer than %d bytes", name, MaxNameLength)
	}
	if !nameRE.MatchString(name) {
		return fmt.Errorf("tool name %q is invalid: use dot-separated identifiers (letters, digits, _ and -)", name)
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '$' && (i == 0 || name[i-1] == '.') {
			return fmt.Errorf("tool name %q is invalid: segments starting with '$' are reserved", name)
		}
	}
	return nil
}
