package mcpserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/ptcrun/ptc/internal/core"
)

// The MCP SDK answers requests it cannot decode with its Go error text
// ("handling 'tools/call': invalid params: unmarshaling … into a
// *mcp.CallToolParamsRaw: json: cannot unmarshal … Go struct field …"):
// the names of its types and decoders reach the client. What leaves ptc
// is classified instead: a JSON-RPC error keeps its code and gets a
// message that says what is wrong in the protocol's terms; an HTTP error
// the SDK writes as text becomes a JSON-RPC error too.

// internalText matches what marks a message as Go's or the SDK's own
// words: decoder errors, Go type names, runtime text.
var internalText = regexp.MustCompile(`Go struct|Go value|unmarshal|json: |\*mcp\.|mcp\.[A-Za-z]+Params|interface \{\}|map\[string\]|jsonrpc2|runtime error|goroutine |panic|\.go:\d`)

// handlingMethod finds the method in the SDK's "handling 'tools/call': …".
var handlingMethod = regexp.MustCompile(`^handling '([A-Za-z/_]{1,64})'`)

// maxErrorMessage bounds the message of a JSON-RPC error ptc sends.
const maxErrorMessage = 1 << 10

// JSON-RPC's error codes.
const (
	codeParseError     = -32700
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

// classifyError returns the code and message a client gets for a
// JSON-RPC error: msg itself when it holds nothing of Go's or the SDK's
// own, else a message by code (invalid params name the method).
func classifyError(code int64, msg string) (int64, string) {
	// The SDK's messages quote the request (an unknown method, an unknown
	// tool's name) whole: a client's megabytes come back cut.
	msg = core.Clip(msg, maxErrorMessage)
	if !internalText.MatchString(msg) {
		return code, msg
	}
	method := "the method"
	if m := handlingMethod.FindStringSubmatch(msg); m != nil {
		method = m[1]
	}
	if code == 0 && strings.Contains(msg, "unmarshal") {
		code = codeInvalidParams
	}
	switch code {
	case codeParseError:
		return code, "parse error: the message is not valid JSON"
	case codeInvalidRequest:
		return code, "invalid request: the message is not a valid JSON-RPC request"
	case codeMethodNotFound:
		return code, "method not found"
	case codeInvalidParams:
		return code, "invalid params for " + method + ": a parameter has the wrong JSON type or a required one is missing (see the method in the MCP specification)"
	}
	return codeInternalError, "internal error: " + method + " could not be handled"
}

// classifyWire classifies the JSON-RPC error in one message (or a batch)
// as written on the wire; changed is false when data is no such message
// or needs nothing, and is to be left as it is.
func classifyWire(data []byte) (out []byte, changed bool) {
	trimmed := bytes.TrimSpace(data)
	// Only an error answer is read: a message with the member "result"
	// or "method" is none (inside a JSON string those bytes would be
	// escaped), and a large result is not decoded for nothing.
	if len(trimmed) == 0 || !bytes.Contains(trimmed, []byte(`"error"`)) ||
		trimmed[0] == '{' && (bytes.Contains(trimmed, []byte(`"result":`)) || bytes.Contains(trimmed, []byte(`"method":`))) {
		return data, false
	}
	if trimmed[0] == '[' {
		var elems []json.RawMessage
		if json.Unmarshal(trimmed, &elems) != nil {
			return data, false
		}
		for i, e := range elems {
			if r, ok := classifyWire(e); ok {
				elems[i], changed = r, true
			}
		}
		if !changed {
			return data, false
		}
		b, err := json.Marshal(elems)
		return b, err == nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(trimmed, &m) != nil || m["error"] == nil {
		return data, false
	}
	var e struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	if json.Unmarshal(m["error"], &e) != nil {
		return data, false
	}
	code, msg := classifyError(e.Code, e.Message)
	if code == e.Code && msg == e.Message {
		return data, false
	}
	e.Code, e.Message, e.Data = code, msg, nil
	b, err := json.Marshal(e)
	if err != nil {
		return data, false
	}
	m["error"] = b
	out, err = json.Marshal(m)
	return out, err == nil
}

// classifyResponse classifies an outgoing response's error (stdio and
// other transports).
func classifyResponse(r *jsonrpc.Response) *jsonrpc.Response {
	if r == nil || r.Error == nil {
		return r
	}
	// The wire carries the whole text of the error, with the code of the
	// *jsonrpc.Error it wraps (if any).
	var code int64
	msg := r.Error.Error()
	var we *jsonrpc.Error
	if errors.As(r.Error, &we) {
		code = we.Code
	}
	c, m := classifyError(code, msg)
	if c == code && m == msg {
		return r
	}
	return &jsonrpc.Response{ID: r.ID, Error: &jsonrpc.Error{Code: c, Message: m}}
}

// classifyingWriter classifies what the SDK writes to an HTTP client:
// each event of an event stream and each JSON answer (the SDK writes
// either whole, in one Write) has its JSON-RPC error classified, and an
// HTTP error the SDK writes as text is answered as a JSON-RPC error with
// a classified message.
type classifyingWriter struct {
	http.ResponseWriter
	// plainError: the response is an HTTP error written as text; its
	// body is replaced.
	plainError bool
	status     int
}

func (w *classifyingWriter) WriteHeader(code int) {
	h := w.Header()
	if code >= 400 && strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		w.plainError, w.status = true, code
		h.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		// The body may change length.
		h.Del("Content-Length")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *classifyingWriter) Write(b []byte) (int, error) {
	if w.plainError {
		msg := core.Clip(strings.TrimSpace(string(b)), maxErrorMessage)
		if internalText.MatchString(msg) || msg == "" {
			msg = plainErrorMessage(w.status)
		}
		out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": codeRequestRefused, "message": msg}})
		if _, err := w.ResponseWriter.Write(append(out, '\n')); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	if data, ok := bytes.CutPrefix(b, []byte("event: message\n")); ok {
		// One event: "event: message\n[id: …\n]data: {…}\n\n".
		if i := bytes.Index(data, []byte("data: ")); i >= 0 && bytes.HasSuffix(data, []byte("\n\n")) {
			payload := data[i+len("data: ") : len(data)-2]
			if out, changed := classifyWire(payload); changed {
				ev := make([]byte, 0, len(b)+len(out))
				ev = append(ev, b[:len("event: message\n")+i+len("data: ")]...)
				ev = append(append(ev, out...), '\n', '\n')
				if _, err := w.ResponseWriter.Write(ev); err != nil {
					return 0, err
				}
				return len(b), nil
			}
		}
		return w.ResponseWriter.Write(b)
	}
	if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		if out, changed := classifyWire(b); changed {
			if _, err := w.ResponseWriter.Write(out); err != nil {
				return 0, err
			}
			return len(b), nil
		}
	}
	return w.ResponseWriter.Write(b)
}

// plainErrorMessage is the message of an HTTP error whose text was the
// SDK's own.
func plainErrorMessage(status int) string {
	if status == http.StatusBadRequest {
		return "the request is not a valid MCP message: send one JSON-RPC message (a JSON object), as the MCP specification describes"
	}
	return strings.ToLower(http.StatusText(status))
}

// Flush keeps event streams working through the wrapper.
func (w *classifyingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// FlushError passes http.ResponseController's Flush on.
func (w *classifyingWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *classifyingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
