package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

// TestSessionProgress: with OnProgress the Go client receives a started
// and a finished event for every call, server tools and client tools
// alike, all before the result; values only with ProgressValues.
func TestSessionProgress(t *testing.T) {
	f := start(t)
	double := clientTool("double", `{"type":"object","properties":{"n":{"type":"number"}}}`, func(_ context.Context, c tools.Call) (json.RawMessage, error) {
		var a struct{ N float64 }
		_ = json.Unmarshal(c.Arguments, &a)
		return json.Marshal(a.N * 2)
	})
	src := `const team = await tools.get_team_members({department: "engineering"});
const d = await tools.double({n: team.length});
try { await tools.get_budget_by_level({level: "nope"}) } catch (e) {}
return d`
	for _, values := range []bool{false, true} {
		t.Run(fmt.Sprintf("values=%v", values), func(t *testing.T) {
			var got []ptc.ProgressEvent
			res, err := f.client.Run(context.Background(), ptc.Request{Source: src, ProgressValues: values,
				OnProgress: func(e ptc.ProgressEvent) { got = append(got, e) }}, double)
			if err != nil || res.Error != nil || string(res.Result) != "40" {
				t.Fatal(err, res)
			}
			var lines []string
			for _, e := range got {
				lines = append(lines, fmt.Sprintf("#%d %s finished=%v outcome=%s", e.Seq, e.Tool, e.Finished, e.Outcome))
				if e.Finished && e.Duration <= 0 || e.ArgumentBytes == 0 || e.Dropped != 0 {
					t.Errorf("event %+v", e)
				}
				if e.Finished && e.Outcome == "ok" && e.ResultBytes == 0 {
					t.Errorf("no result size: %+v", e)
				}
				if hasValues := len(e.Arguments) > 0; hasValues != values {
					t.Errorf("values=%v, event %+v", values, e)
				}
			}
			want := "#1 get_team_members finished=false outcome=\n#1 get_team_members finished=true outcome=ok\n" +
				"#2 double finished=false outcome=\n#2 double finished=true outcome=ok\n" +
				"#3 get_budget_by_level finished=false outcome=\n#3 get_budget_by_level finished=true outcome=invalid_arguments"
			if strings.Join(lines, "\n") != want {
				t.Fatalf("events\n%s\nwant\n%s", strings.Join(lines, "\n"), want)
			}
			last := got[len(got)-1]
			if values && (!strings.Contains(last.ErrorMessage, "level") || string(got[3].Result) != "40") {
				t.Fatalf("values: %+v / %+v", last, got[3])
			}
			if !values && (last.ErrorMessage != "" || got[3].Result != nil) {
				t.Fatalf("values without asking: %+v", last)
			}
		})
	}
	// Without OnProgress nothing is streamed.
	res, err := f.client.Run(context.Background(), ptc.Request{Source: src}, double)
	if err != nil || res.Error != nil {
		t.Fatal(err, res)
	}
}
