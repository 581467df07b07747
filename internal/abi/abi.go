// Package abi defines version 1 of the host ABI between a WebAssembly guest
// and ptc: the import module name, the host function names, the status codes
// and the JSON shapes of errors and batch calls. docs/wasm-abi.md describes
// the protocol in full.
//
// Both sides use it: the host (internal/runtime/wasm) and the Go guest SDK
// (bridge/guest), so it imports only the standard library and must stay
// buildable for GOOS=wasip1. It is internal: guests written in Go use
// bridge/guest, guests in other languages docs/wasm-abi.md.
package abi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ModuleName is the import module of the host functions. A new,
// incompatible ABI gets a new name (ptc_v2); the host may serve several.
const ModuleName = "ptc_v1"

// WASIModuleName is the only other import module a guest may use.
const WASIModuleName = "wasi_snapshot_preview1"

// Host function names in ModuleName.
const (
	// FuncCall is call(name_ptr, name_len, args_ptr, args_len, out_ptr) -> status.
	FuncCall = "call"
	// FuncCallBatch is call_batch(req_ptr, req_len, out_ptr) -> status.
	FuncCallBatch = "call_batch"
	// FuncRead is read(handle, buf_ptr, buf_len) -> length.
	FuncRead = "read"
	// FuncDrop is drop(handle).
	FuncDrop = "drop"
)

// Status codes returned by call and call_batch.
const (
	// StatusOK means the payload is the result JSON (for call_batch, the
	// array of results).
	StatusOK int32 = 0
	// StatusError means the payload is an Error object as JSON.
	StatusError int32 = 1
)

// Bounds the host enforces. A guest that breaks one of the trap bounds is
// stopped with a trap that names the bound.
const (
	// OutSize is the size of the out record the host writes at out_ptr: a
	// little-endian u32 handle followed by a little-endian u32 length.
	OutSize = 8
	// MaxPendingResults is the number of result handles a guest may hold
	// unread at once; one more traps.
	MaxPendingResults = 1024
	// MaxBatchCalls is the number of calls one call_batch may carry.
	MaxBatchCalls = 1024
	// MaxBatchBytes bounds the JSON request of one call_batch.
	MaxBatchBytes = 16 << 20
	// MaxNameBytes bounds a tool name passed to call; longer names get an
	// unknown_tool error without being echoed.
	MaxNameBytes = 256
)

// Error codes the guest SDK needs. The tool error codes have their home in
// package tools, which a guest cannot import (it must stay standard library
// only for GOOS=wasip1): CodeToolFailed repeats tools.CodeToolFailed, and a
// test keeps them equal.
const (
	// CodeInvalidBatch is the code of a call_batch request that is not a
	// JSON array of {"tool", "args"} objects within the bounds.
	CodeInvalidBatch = "invalid_batch"
	// CodeToolFailed is tools.CodeToolFailed.
	CodeToolFailed = "tool_failed"
)

// Error names used by the host ABI itself (the bridge's names are
// ToolArgumentError, ToolError and ToolCallLimitError).
const (
	// NameToolError is the name of errors raised by or about a tool.
	NameToolError = "ToolError"
	// NameArgumentError is the name of errors about a call's arguments.
	NameArgumentError = "ToolArgumentError"
)

// Violation is one reason arguments or a result do not match a schema.
type Violation struct {
	Path    string `json:"path"`
	Keyword string `json:"keyword"`
	Message string `json:"message"`
}

// Error is a failed tool call as the guest receives it.
type Error struct {
	// Name is ToolArgumentError, ToolError or ToolCallLimitError.
	Name string `json:"name"`
	// Tool is the tool that was called.
	Tool string `json:"tool"`
	// Code is a stable code to branch on, e.g. "invalid_arguments",
	// "tool_call_limit", "unknown_tool", or a tool's own code.
	Code string `json:"code"`
	// Message says what went wrong and what to do.
	Message string `json:"message"`
	// Errors lists schema violations, if any.
	Errors []Violation `json:"errors,omitempty"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (tool %q, code %s)", e.Name, e.Message, e.Tool, e.Code)
}

// BatchCall is one element of a call_batch request.
type BatchCall struct {
	// Tool is the tool name.
	Tool string `json:"tool"`
	// Args is the arguments object; absent or null means {}.
	Args json.RawMessage `json:"args,omitempty"`
}

// BatchResult is one element of a call_batch response, in request order.
type BatchResult struct {
	// OK is true when Result holds the tool's result.
	OK bool `json:"ok"`
	// Result is the result JSON when OK.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the failure when not OK.
	Error *Error `json:"error,omitempty"`
}

// ErrInvalidBatch is wrapped by every error of ParseBatch.
var ErrInvalidBatch = errors.New("invalid batch request")

// ParseBatch decodes and checks a call_batch request: a JSON array of at
// most MaxBatchCalls objects with a string "tool" and any "args" value, in
// at most MaxBatchBytes. Errors wrap ErrInvalidBatch and say what to fix.
func ParseBatch(data []byte) ([]BatchCall, error) {
	if len(data) > MaxBatchBytes {
		return nil, fmt.Errorf("%w: request is %d bytes, more than the %d allowed; split the batch", ErrInvalidBatch, len(data), MaxBatchBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: request is not JSON: send a JSON array of {\"tool\",\"args\"} objects", ErrInvalidBatch)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("%w: request is not a JSON array: send a JSON array of {\"tool\",\"args\"} objects", ErrInvalidBatch)
	}
	var calls []BatchCall
	for dec.More() {
		if len(calls) == MaxBatchCalls {
			return nil, fmt.Errorf("%w: more than %d calls; split the batch", ErrInvalidBatch, MaxBatchCalls)
		}
		var raw struct {
			Tool *string         `json:"tool"`
			Args json.RawMessage `json:"args"`
		}
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: call %d is not a {\"tool\",\"args\"} object", ErrInvalidBatch, len(calls))
		}
		if raw.Tool == nil {
			return nil, fmt.Errorf("%w: call %d has no \"tool\" string", ErrInvalidBatch, len(calls))
		}
		args := raw.Args
		if len(args) == 0 || string(args) == "null" {
			args = nil
		}
		calls = append(calls, BatchCall{Tool: *raw.Tool, Args: args})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: request is not a complete JSON array", ErrInvalidBatch)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: request has data after the JSON array", ErrInvalidBatch)
	}
	return calls, nil
}
