package ptc_test

import (
	"errors"

	ptc "github.com/ptcrun/ptc/bridge/guest"
)

// A guest reads its input, calls a tool and returns a small result. Build
// it with GOOS=wasip1 GOARCH=wasm go build; ptc runs it with the input on
// stdin and the tools behind the ptc_v1 host module.
func ExampleCall() {
	var in struct {
		Department string `json:"department"`
	}
	if err := ptc.Input(&in); err != nil {
		ptc.Fail(err)
	}
	var team []struct {
		ID string `json:"id"`
	}
	if err := ptc.Call("get_team_members", map[string]string{"department": in.Department}, &team); err != nil {
		var e *ptc.Error
		if errors.As(err, &e) && e.Code == "tool_call_limit" {
			ptc.Log("out of tool calls")
		}
		ptc.Fail(err)
	}
	ptc.Return(map[string]int{"members": len(team)})
}

// CallAll sends several calls in one host call; the host runs them
// concurrently and returns the responses in request order.
func ExampleCallAll() {
	ids := []string{"eng-1", "eng-2", "eng-3"}
	reqs := make([]ptc.Request, len(ids))
	for i, id := range ids {
		reqs[i] = ptc.Request{Tool: "get_expenses", Args: map[string]string{"member_id": id, "quarter": "Q3"}}
	}
	total := 0
	for _, r := range ptc.CallAll(reqs) {
		var items []struct{ Amount float64 }
		if err := r.Decode(&items); err != nil {
			ptc.Log("skipping a member:", err)
			continue
		}
		total += len(items)
	}
	ptc.Return(total)
}
