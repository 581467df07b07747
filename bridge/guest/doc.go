// Package ptc is the Go guest SDK of ptc: it lets a Go program compiled with
// GOOS=wasip1 GOARCH=wasm read its input, call the harness's tools through
// the ptc_v1 host ABI, log, and return its result.
//
//	func main() {
//		var in struct{ Team string }
//		if err := ptc.Input(&in); err != nil {
//			ptc.Fail(err)
//		}
//		var members []Member
//		if err := ptc.Call("get_team_members", map[string]any{"team": in.Team}, &members); err != nil {
//			ptc.Fail(err)
//		}
//		ptc.Return(len(members))
//	}
//
// Tool calls block until their result arrives; CallAll runs several calls
// concurrently on the host and returns when all are done. A failed call
// returns an *Error whose Code a program can branch on.
//
// The host functions exist only in GOOS=wasip1 builds; elsewhere the
// package compiles (so that tools and editors work) but every tool call
// fails with ErrUnsupported. docs/wasm-abi.md describes the ABI for guests in
// other languages.
package ptc
