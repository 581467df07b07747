package cassette

import (
	"bytes"
	"context"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools/demo"
)

// TestRecordReplayTruncated: the overflow policy is part of the recorded
// request, so a truncated result replays identically.
func TestRecordReplayTruncated(t *testing.T) {
	r, err := ptc.NewRunner(ptc.WithTools(demo.Tools()...))
	if err != nil {
		t.Fatal(err)
	}
	req := ptc.Request{Source: `return await tools.get_team_members({department: "engineering"})`, Deterministic: true, Seed: 7,
		IncludeToolResults: true, TruncateResult: true, Limits: ptc.Limits{MaxOutputBytes: 256}}
	orig, err := r.Execute(context.Background(), req)
	if err != nil || orig.Error != nil || !orig.Stats.ResultTruncated {
		t.Fatal(err, orig.Error, orig.Stats)
	}
	c, err := New(req, r.Tools(), "team.js", orig)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if c, err = Read(&buf); err != nil || !c.Request.TruncateResult {
		t.Fatal(err, c.Request)
	}
	res, div := replay(t, c, nil)
	if div != nil || string(res.Result) != string(orig.Result) {
		t.Fatalf("divergence %v, result %s, recorded %s", div, res.Result, orig.Result)
	}
}
