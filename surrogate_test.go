package ptc_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
)

// TestResultSchemaMergedNames: a result whose property names the schema
// validator could not tell apart is refused, never checked as one merged
// property.
func TestResultSchemaMergedNames(t *testing.T) {
	r := newDemoRunner(t)
	schema := json.RawMessage(`{"type":"object","maxProperties":1}`)
	cases := []struct {
		name, src, result, msg string
	}{
		{"one lone name", `return {["\ud800"]: 1}`, `{"\ud800":1}`, ""},
		{"names apart", `return {["\ud800a"]: 1}`, `{"\ud800a":1}`, ""},
		{"names merged", `return {["\ud800"]: 1, ["\ud801"]: 2}`, "", "differ only in unpaired surrogates"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := r.Execute(context.Background(), ptc.Request{Source: c.src, ResultSchema: schema})
			if err != nil {
				t.Fatal(err)
			}
			if c.msg == "" {
				if res.Error != nil || string(res.Result) != c.result {
					t.Fatalf("result %s, error %v", res.Result, res.Error)
				}
				return
			}
			if res.Error == nil || res.Error.Kind != ptc.KindResultSchema || !strings.Contains(res.Error.Message, c.msg) {
				t.Fatalf("result %s, error %v", res.Result, res.Error)
			}
		})
	}
}
