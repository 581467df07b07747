// Command callflood calls one tool until a call fails, then fails with that
// error; with a call budget ptc ends it with TOOL_CALL_LIMIT. Input:
// {"tool": "name", "args": {...}}.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o callflood.wasm ./examples/wasm/callflood
package main

import (
	"encoding/json"

	ptc "github.com/ptcrun/ptc/bridge/guest"
)

func main() {
	var in struct {
		Tool string          `json:"tool"`
		Args json.RawMessage `json:"args"`
	}
	if err := ptc.Input(&in); err != nil {
		ptc.Fail(err)
	}
	for n := 0; ; n++ {
		if _, err := ptc.CallRaw(in.Tool, in.Args); err != nil {
			ptc.Logf("call %d failed", n+1)
			ptc.Fail(err)
		}
	}
}
