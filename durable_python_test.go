package ptc_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

// reviewPy is reviewJS in Python.
const reviewPy = `
team = await tools.get_team_members(department="sales")
pick = await tools.ask_user(question="Whose expenses?", options=[m["id"] for m in team])
items = await tools.get_expenses(member_id=pick["id"], quarter="Q1")
total = sum(round(x["amount"] * 100) for x in items) / 100
print("total", total)
try:
    mailed = (await tools.mail.send(to=pick["id"]))["sent"]
except ToolError as e:
    mailed = e.code + ": " + e.message
return {"id": pick["id"], "items": len(items), "total": total, "mailed": mailed}
`

// TestResumablePython pauses a Python script twice (a client tool, then
// an approval) and resumes it on the same runner (parked in memory) and
// on another one sharing the key (a re-run from the journal): the
// approved tool runs once, a denied one never.
func TestResumablePython(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the Python interpreter")
	}
	var runs atomic.Int64
	a, b := durableRunner(t, &runs), durableRunner(t, &runs)
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		resumer *ptc.Runner
		approve bool
		want    string
	}{
		{"approved, re-run on another runner", b, true, `{"id":"sal-01","items":35,"total":9887.14,"mailed":true}`},
		{"denied, parked", a, false, `{"id":"sal-01","items":35,"total":9887.14,"mailed":"denied: not during audits"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := a.Execute(ctx, ptc.Request{Language: ptc.LanguagePython, Source: reviewPy, Resumable: true, ClientTools: []tools.Tool{askUser}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Pending) != 1 || res.Pending[0].Tool != "ask_user" {
				t.Fatalf("first pause: %+v %v", res.Pending, res.Error)
			}
			res, err = a.Resume(ctx, res.Continuation, ptc.Answer{CallID: res.Pending[0].CallID, Output: json.RawMessage(`{"id":"sal-01"}`)})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Pending) != 1 || !res.Pending[0].Approval || res.Pending[0].Tool != "mail.send" || string(res.Pending[0].Arguments) != `{"to":"sal-01"}` {
				t.Fatalf("second pause: %+v %v", res.Pending, res.Error)
			}
			if len(res.Logs) != 1 || !strings.HasPrefix(res.Logs[0].Message, "total ") {
				t.Fatalf("logs of the second segment: %+v", res.Logs)
			}
			ans := ptc.Answer{CallID: res.Pending[0].CallID, Approve: true}
			if !c.approve {
				ans = ptc.Answer{CallID: res.Pending[0].CallID, Deny: true, Reason: "not during audits"}
			}
			res, err = c.resumer.Resume(ctx, res.Continuation, ans)
			if err != nil {
				t.Fatal(err)
			}
			if res.Error != nil || res.RequiresAction() {
				t.Fatalf("end: %v %+v", res.Error, res.Pending)
			}
			if string(res.Result) != c.want || runs.Load() != 1 {
				t.Fatalf("result %s, mail sent %d times", res.Result, runs.Load())
			}
		})
	}
}
