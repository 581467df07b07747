package bridge_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/tools"
)

// TestDiscovery: $search finds tools with their descriptions; $describe
// gives a tool's schemas, declaration and approval flag, the same each
// time it is asked (it is made once per execution), and nothing for an
// unknown name.
func TestDiscovery(t *testing.T) {
	h := func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`1`), nil }
	d := bridge.New(bridge.Config{ExecutionID: "ex", MaxConcurrent: 1, Approvals: map[string]string{"mail.send": "it sends mail"}, Tools: []*tools.Compiled{
		compile(t, tools.Tool{Definition: tools.Definition{Name: "mail.send", Description: "Send an email to a colleague",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`)}, Handler: h}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "weather", Description: "Today's weather in a city"}, Handler: h}),
	}})
	hits := d.Search("email", 5)
	if len(hits) == 0 || hits[0].Name != "mail.send" || hits[0].Description != "Send an email to a colleague" {
		t.Fatalf("search: %+v", hits)
	}
	first, ok := d.Describe("mail.send")
	if !ok || !first.RequiresApproval || first.InputSchema == nil || first.TypeScript == "" {
		t.Fatalf("describe: %+v %v", first, ok)
	}
	a, _ := json.Marshal(first)
	for range 3 {
		again, _ := d.Describe("mail.send")
		if b, _ := json.Marshal(again); string(b) != string(a) {
			t.Fatalf("described again: %s, first %s", b, a)
		}
	}
	if w, ok := d.Describe("weather"); !ok || w.RequiresApproval || w.Name != "weather" {
		t.Fatalf("weather: %+v %v", w, ok)
	}
	if _, ok := d.Describe("nope"); ok {
		t.Fatal("an unknown tool was described")
	}
}
