package mcp

import "github.com/modelcontextprotocol/go-sdk/jsonrpc"

// sdkWireError is a JSON-RPC error answered by the server.
type sdkWireError = jsonrpc.Error

// isLocalWireCode reports JSON-RPC error codes that the SDK produces itself
// when a request cannot be delivered (client or server closing, rejected by
// the transport): the connection is in trouble, the server said nothing.
func isLocalWireCode(code int64) bool {
	return code == -32003 || code == -32004 || code == -32005
}
