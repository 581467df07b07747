package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A JSON text that names a member of one object twice
// ({"approve": false, "approve": true}) means whatever the decoder that
// reads it decides (the MCP SDK keeps the last one). ptc reads no such
// message: an answer to one of its requests (an approval) becomes an
// error answer, which denies; a request is refused with a JSON-RPC error.

// JSON-RPC error codes of messages refused for their shape.
const (
	// codeAmbiguousAnswer replaces a client's answer that names a member
	// twice: the request it answers fails, and an approval is denied.
	codeAmbiguousAnswer = -32001
	// codeInvalidRequest is JSON-RPC's: the message is not a valid request.
	codeInvalidRequest = -32600
)

// Messages of the refusals.
const (
	msgAmbiguousAnswer  = "the answer names a member of one object twice, so what it says is ambiguous: it is refused"
	msgAmbiguousRequest = "the message names a member of one object twice, so what it says is ambiguous: send each member once"
)

// nameFrame is an object or array open while duplicateNames reads: for
// an object, where its names start in the shared list, and a set of them
// once it has many.
type nameFrame struct {
	object bool
	start  int
	set    map[string]struct{}
}

// smallObject is how many names an object's list holds before
// duplicateNames indexes them in a set.
const smallObject = 32

// duplicateNames reports whether the JSON text data names a member of one
// object twice, names compared as a decoder sees them: unescaped, and
// with invalid UTF-8 and unpaired surrogates replaced (two names that
// differ only there are one). It reads at the speed of a byte scan (the
// body of every MCP request passes here): it does not validate the text,
// which the MCP layer does next, and text it cannot follow — an
// unterminated string, an unbalanced bracket — counts as ambiguous.
func duplicateNames(data []byte) bool {
	var stack []nameFrame
	var names [][]byte // the names of the open objects, innermost last
	wantName := false
	for i := 0; i < len(data); {
		switch c := data[i]; c {
		case '{':
			stack = append(stack, nameFrame{object: true, start: len(names)})
			wantName = true
			i++
		case '[':
			stack = append(stack, nameFrame{start: len(names)})
			wantName = false
			i++
		case '}', ']':
			top := len(stack) - 1
			if top < 0 || stack[top].object != (c == '}') {
				return true
			}
			names = names[:stack[top].start]
			stack = stack[:top]
			wantName = false
			i++
		case ',':
			wantName = len(stack) > 0 && stack[len(stack)-1].object
			i++
		case ':':
			wantName = false
			i++
		case '"':
			end, escaped := stringEnd(data, i)
			if end < 0 {
				return true
			}
			if wantName {
				name := data[i+1 : end-1]
				if escaped || !utf8.Valid(name) {
					var s string
					if json.Unmarshal(data[i:end], &s) != nil {
						return true
					}
					name = []byte(s)
				}
				f := &stack[len(stack)-1]
				if f.set != nil {
					if _, seen := f.set[string(name)]; seen {
						return true
					}
					f.set[string(name)] = struct{}{}
				} else {
					for _, n := range names[f.start:] {
						if bytes.Equal(n, name) {
							return true
						}
					}
					names = append(names, name)
					if len(names)-f.start > smallObject {
						f.set = make(map[string]struct{}, 2*smallObject)
						for _, n := range names[f.start:] {
							f.set[string(n)] = struct{}{}
						}
						names = names[:f.start]
					}
				}
				wantName = false
			}
			i = end
		default: // whitespace, numbers, literals
			i++
		}
	}
	return len(stack) != 0
}

// stringEnd returns the index just past the string that starts at
// data[i] (a quote) and whether it holds an escape; -1 when it does not
// end.
func stringEnd(data []byte, i int) (end int, escaped bool) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, escaped
}

// maxBatchMessages bounds the messages of one JSON-RPC batch (protocol
// 2025-03-26 allows batches; later versions do not): the MCP layer
// decodes, dispatches and answers each message on its own, at 70–220 µs
// apiece, so a 16 MiB body of 300,000 pings took 23 s of CPU.
const maxBatchMessages = 64

// msgBatchTooLong refuses a batch past maxBatchMessages.
var msgBatchTooLong = fmt.Sprintf("a JSON-RPC batch holds at most %d messages: send the rest in further requests", maxBatchMessages)

// batchLen returns the number of elements of body when it is a JSON
// array (a batch), counted at its top level without decoding them, and 0
// otherwise. Malformed JSON is counted as far as it goes; the MCP layer
// refuses it.
func batchLen(body []byte) int {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		return 0
	}
	depth, n, element := 0, 0, false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '"':
			end, _ := stringEnd(body, i)
			if end < 0 {
				end = len(body)
			}
			element, i = true, end-1
		case '[', '{':
			element = element || depth > 0
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				n++
			}
		case ' ', '\t', '\n', '\r':
		default: // numbers and literals
			element = true
		}
	}
	if element {
		n++
	}
	return n
}

// screenBody checks the messages of an HTTP request body (one message or
// a batch). A response that names a member twice is replaced by an error
// response to the same id (codeAmbiguousAnswer); any other message doing
// so makes refuse true. A body that is not JSON is left to the MCP
// layer's own answer.
func screenBody(body []byte) (out []byte, refuse bool) {
	trimmed := bytes.TrimSpace(body)
	if !duplicateNames(trimmed) {
		return body, false
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var elems []json.RawMessage
		if json.Unmarshal(trimmed, &elems) != nil {
			return body, false
		}
		for i, e := range elems {
			r, isAnswer := screenMessage(e)
			if !isAnswer {
				return nil, true
			}
			elems[i] = r
		}
		b, err := json.Marshal(elems)
		if err != nil {
			return nil, true
		}
		return b, false
	}
	if !json.Valid(trimmed) {
		return body, false
	}
	r, isAnswer := screenMessage(trimmed)
	if !isAnswer {
		return nil, true
	}
	return r, false
}

// screenMessage returns m as it stands when it names no member twice, its
// replacement when it is an answer (no "method") that does, and
// isAnswer false for any other message that does.
func screenMessage(m json.RawMessage) (out json.RawMessage, isAnswer bool) {
	if !duplicateNames(m) {
		return m, true
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(m, &env) != nil {
		return nil, false
	}
	if _, isRequest := env["method"]; isRequest {
		return nil, false
	}
	var id any
	if json.Unmarshal(env["id"], &id) != nil {
		id = nil
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": codeAmbiguousAnswer, "message": msgAmbiguousAnswer}})
	if err != nil {
		return nil, false
	}
	return b, true
}

// strictTransport wraps a transport (stdio, in memory) so that its
// connection classifies the errors it sends (classifyResponse) and
// screens what the client sends: an answer whose result names
// a member twice becomes an error answer (codeAmbiguousAnswer); a request
// whose parameters do is answered with codeInvalidRequest and not
// handled, a notification dropped.
type strictTransport struct{ sdk.Transport }

func (t strictTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return strictConn{c}, nil
}

type strictConn struct{ sdk.Connection }

func (c strictConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			return m, err
		}
		switch m := m.(type) {
		case *jsonrpc.Response:
			if m.Error == nil && duplicateNames(m.Result) {
				return &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: codeAmbiguousAnswer, Message: msgAmbiguousAnswer}}, nil
			}
		case *jsonrpc.Request:
			withRequestID(m)
			if len(m.Params) > 0 && duplicateNames(m.Params) {
				if m.ID.IsValid() {
					if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: codeInvalidRequest, Message: msgAmbiguousRequest}}); err != nil {
						return nil, err
					}
				}
				continue
			}
		}
		return m, nil
	}
}

// Write classifies the error of an outgoing response (classifyResponse).
func (c strictConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Response); ok {
		m = classifyResponse(r)
	}
	return c.Connection.Write(ctx, m)
}
