package ptc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/ptcrun/ptc/internal/abi"
)

// Error is a failed tool call, as the host sends it (docs/wasm-abi.md).
type Error struct {
	// Name is "ToolArgumentError", "ToolError" or "ToolCallLimitError".
	Name string `json:"name"`
	// Tool is the tool that was called.
	Tool string `json:"tool"`
	// Code is a stable code to branch on, e.g. "invalid_arguments",
	// "tool_call_limit", "unknown_tool", or the tool's own.
	Code string `json:"code"`
	// Message says what went wrong and what to do.
	Message string `json:"message"`
	// Errors lists the schema violations of invalid arguments.
	Errors []Violation `json:"errors,omitempty"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (tool %q, code %s)", e.Name, e.Message, e.Tool, e.Code)
}

// Violation is one schema violation of an Error.
type Violation struct {
	// Path is the JSON pointer of the offending value.
	Path string `json:"path"`
	// Keyword is the schema keyword that failed.
	Keyword string `json:"keyword"`
	// Message describes the violation.
	Message string `json:"message"`
}

// batchResult is one element of a call_batch response (abi.BatchResult,
// decoded into this package's Error).
type batchResult struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// ErrUnsupported is returned by tool calls in programs not built for
// GOOS=wasip1, which have no host to call.
var ErrUnsupported = errors.New("ptc: tool calls need a GOOS=wasip1 build run by ptc")

// Request is one call of a batch.
type Request struct {
	// Tool is the tool name.
	Tool string
	// Args is marshalled to the arguments JSON; nil means {}.
	Args any
}

// Response is the outcome of one call of a batch: Result when Err is nil.
type Response struct {
	// Result is the tool's result JSON.
	Result json.RawMessage
	// Err is the failure, nil on success.
	Err *Error
}

// Decode unmarshals the result into out, or returns the call's error.
func (r Response) Decode(out any) error {
	if r.Err != nil {
		return r.Err
	}
	return json.Unmarshal(r.Result, out)
}

// host is the ABI as the SDK uses it; hostABI implements it with the real
// host functions on wasip1.
type host interface {
	call(name string, args []byte) (status int32, payload []byte)
	callBatch(req []byte) (status int32, payload []byte)
}

// client implements the SDK over a host.
type client struct{ h host }

// Call calls the tool name with args marshalled to JSON (nil means {}) and
// unmarshals its result into out (skipped when out is nil). A failed call
// returns an *Error.
func Call(name string, args any, out any) error { return client{hostABI()}.callDecode(name, args, out) }

// CallRaw calls the tool name with JSON arguments (empty means {}) and
// returns its result JSON. A failed call returns an *Error.
func CallRaw(name string, args []byte) (json.RawMessage, error) {
	return client{hostABI()}.callRaw(name, args)
}

// CallAll runs the requests concurrently on the host (up to the
// execution's concurrency limit) and returns their responses in order.
func CallAll(reqs []Request) []Response { return client{hostABI()}.callAll(reqs) }

func (c client) callDecode(name string, args any, out any) error {
	raw, err := marshalArgs(args)
	if err != nil {
		return fmt.Errorf("ptc: arguments of %s: %w", name, err)
	}
	res, err := c.callRaw(name, raw)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res, out); err != nil {
		return fmt.Errorf("ptc: result of %s: %w", name, err)
	}
	return nil
}

func (c client) callRaw(name string, args []byte) (json.RawMessage, error) {
	status, payload := c.h.call(name, args)
	switch status {
	case abi.StatusOK:
		return payload, nil
	case abi.StatusError:
		return nil, decodeError(name, payload)
	default:
		return nil, fmt.Errorf("ptc: host returned unknown status %d for %s", status, name)
	}
}

func (c client) callAll(reqs []Request) []Response {
	out := make([]Response, len(reqs))
	if len(reqs) == 0 {
		return out
	}
	calls := make([]abi.BatchCall, len(reqs))
	for i, r := range reqs {
		raw, err := marshalArgs(r.Args)
		if err != nil {
			return fillError(out, &Error{Name: abi.NameArgumentError, Tool: r.Tool, Code: "invalid_arguments",
				Message: fmt.Sprintf("arguments of call %d cannot be marshalled to JSON: %v", i, err)})
		}
		calls[i] = abi.BatchCall{Tool: r.Tool, Args: raw}
	}
	req, err := json.Marshal(calls)
	if err != nil {
		return fillError(out, &Error{Name: abi.NameArgumentError, Code: abi.CodeInvalidBatch, Message: err.Error()})
	}
	status, payload := c.h.callBatch(req)
	if status != abi.StatusOK {
		return fillError(out, decodeError("", payload))
	}
	var results []batchResult
	if err := json.Unmarshal(payload, &results); err != nil || len(results) != len(reqs) {
		return fillError(out, &Error{Name: abi.NameToolError, Code: abi.CodeToolFailed, Message: "the host returned a malformed batch response"})
	}
	for i, r := range results {
		switch {
		case r.OK:
			out[i] = Response{Result: r.Result}
		case r.Error != nil:
			out[i] = Response{Err: r.Error}
		default:
			out[i] = Response{Err: &Error{Name: abi.NameToolError, Tool: reqs[i].Tool, Code: abi.CodeToolFailed, Message: "the host returned no result"}}
		}
	}
	return out
}

func fillError(out []Response, e *Error) []Response {
	for i := range out {
		out[i] = Response{Err: e}
	}
	return out
}

func marshalArgs(args any) ([]byte, error) {
	switch a := args.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return a, nil
	}
	return json.Marshal(args)
}

func decodeError(name string, payload []byte) *Error {
	var e Error
	if err := json.Unmarshal(payload, &e); err != nil || e.Code == "" {
		return &Error{Name: abi.NameToolError, Tool: name, Code: abi.CodeToolFailed, Message: "the host returned a malformed error"}
	}
	return &e
}

// readInput reads stdin once; the input of an execution never changes.
var readInput = sync.OnceValues(func() ([]byte, error) { return io.ReadAll(os.Stdin) })

// InputRaw returns the execution's input JSON ("null" when there is none).
func InputRaw() (json.RawMessage, error) {
	b, err := readInput()
	if err != nil {
		return nil, fmt.Errorf("ptc: read input: %w", err)
	}
	if len(b) == 0 {
		return json.RawMessage("null"), nil
	}
	return b, nil
}

// Input unmarshals the execution's input into v.
func Input(v any) error {
	b, err := InputRaw()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("ptc: decode input: %w", err)
	}
	return nil
}

// Return writes v as the execution's result JSON to stdout. Call it once:
// stdout must hold exactly one JSON value.
func Return(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ptc: encode result: %w", err)
	}
	b = append(b, '\n')
	_, err = os.Stdout.Write(b)
	return err
}

// Log writes its arguments to the execution's logs (stderr), like
// fmt.Println. Logs never reach the result.
func Log(args ...any) { fmt.Fprintln(os.Stderr, args...) }

// Logf writes a formatted line to the execution's logs (stderr).
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format, args...)
	fmt.Fprintln(os.Stderr)
}

// Fail logs err and ends the program with exit code 1, which ptc reports as
// a SCRIPT_ERROR quoting the end of the logs (or as TOOL_CALL_LIMIT when a
// call was refused for the call budget).
func Fail(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}
