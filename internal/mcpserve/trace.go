package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/telemetry"
)

// requestIDHeader carries a request's JSON-RPC id from the transport to
// the tracing middleware, which the SDK gives the request's HTTP header
// (RequestExtra.Header) but not its id. The HTTP handler sets it from the
// body it read (removing any the client sent); the stdio connection sets
// it on each request it reads.
const requestIDHeader = "Ptc-Jsonrpc-Request-Id"

// transportHeader carries the network transport ("tcp", "pipe") the same
// way.
const transportHeader = "Ptc-Transport"

// protocolHeader is the streamable HTTP transport's protocol version
// header.
const protocolHeader = "Mcp-Protocol-Version"

// idString is the text of a JSON-RPC id: a string as it is, a number in
// decimal; "" for none.
func idString(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

// bodyRequestID returns the JSON-RPC id of a body holding one request;
// "" for anything else (a batch, a notification, an answer).
func bodyRequestID(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return ""
	}
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method == "" || len(m.ID) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(m.ID, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(m.ID, &n) == nil {
		return n.String()
	}
	return ""
}

// withRequestID gives a request read from a stream transport its id in
// the header the tracing middleware reads.
func withRequestID(r *jsonrpc.Request) {
	if r.Extra != nil || !r.ID.IsValid() {
		return
	}
	r.Extra = &sdk.RequestExtra{Header: http.Header{requestIDHeader: []string{idString(r.ID)}, transportHeader: []string{"pipe"}}}
}

// traced is the receiving middleware that makes the SERVER span of each
// request a session receives (notifications excepted): for a tools/call
// of execute, the parent of the admission wait and of the execution's
// span, and so of its tool calls.
func (s *Server) traced(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		r := telemetry.MCPRequest{Method: method, Transport: "pipe"}
		if p := req.GetParams(); p != nil {
			r.Meta = p.GetMeta()
		}
		if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && p != nil {
			// Only ptc's own tools name spans: a made-up name would
			// make span names unbounded.
			if p.Name == ToolExecute || p.Name == ToolSearch {
				r.Target = p.Name
			} else {
				r.Target = "unknown"
			}
		}
		if ss, ok := req.GetSession().(*sdk.ServerSession); ok && ss != nil {
			r.SessionID = ss.ID()
			if ip := ss.InitializeParams(); ip != nil {
				r.ProtocolVersion = ip.ProtocolVersion
			}
		}
		if ex := req.GetExtra(); ex != nil && ex.Header != nil {
			r.RequestID = ex.Header.Get(requestIDHeader)
			if v := ex.Header.Get(transportHeader); v != "" {
				r.Transport = v
			}
			if v := ex.Header.Get(protocolHeader); v != "" {
				r.ProtocolVersion = v
			}
			r.Header = ex.Header
		}
		if method == "initialize" {
			if p, ok := req.GetParams().(*sdk.InitializeParams); ok && p != nil {
				r.ProtocolVersion = p.ProtocolVersion
			}
		}
		ctx, span := s.cfg.Tracing.StartMCPServer(ctx, r)
		res, err := next(ctx, method, req)
		var code int64
		if err != nil {
			code = codeInternalError
			var we *jsonrpc.Error
			if errors.As(err, &we) {
				code = we.Code
			}
		}
		tr, _ := res.(*sdk.CallToolResult)
		s.cfg.Tracing.EndMCPServer(span, code, tr != nil && tr.IsError)
		return res, err
	}
}
