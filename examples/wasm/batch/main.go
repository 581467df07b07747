// Command batch calls one tool n times in a single batch and returns every
// outcome: {"results": [...], "errors": [{"index", "code", "message"}]}.
// Input: {"tool": "name", "n": 4, "args": {...}}.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o batch.wasm ./examples/wasm/batch
package main

import (
	"encoding/json"

	ptc "github.com/ptcrun/ptc/bridge/guest"
)

type callError struct {
	Index   int    `json:"index"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func main() {
	var in struct {
		Tool string          `json:"tool"`
		N    int             `json:"n"`
		Args json.RawMessage `json:"args"`
	}
	if err := ptc.Input(&in); err != nil {
		ptc.Fail(err)
	}
	reqs := make([]ptc.Request, in.N)
	for i := range reqs {
		reqs[i] = ptc.Request{Tool: in.Tool, Args: in.Args}
	}
	out := struct {
		Results []json.RawMessage `json:"results"`
		Errors  []callError       `json:"errors"`
	}{Results: []json.RawMessage{}, Errors: []callError{}}
	for i, r := range ptc.CallAll(reqs) {
		if r.Err != nil {
			out.Errors = append(out.Errors, callError{Index: i, Code: r.Err.Code, Message: r.Err.Message})
			continue
		}
		out.Results = append(out.Results, r.Result)
	}
	if err := ptc.Return(out); err != nil {
		ptc.Fail(err)
	}
}
