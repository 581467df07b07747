package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/tools"
)

// fakeBackend answers tool queries from defs and runs requests with run.
type fakeBackend struct {
	defs []tools.Definition
	run  func(ctx context.Context, req core.Request) (*core.Result, *fault.Error)
}

func (f *fakeBackend) Tools(_ context.Context, q core.ToolQuery) (*core.ToolList, *fault.Error) {
	defs := f.defs
	if q.Limit > 0 && q.Limit < len(defs) {
		defs = defs[:q.Limit]
	}
	return &core.ToolList{Tools: defs, Prompt: "Write a script.\n"}, nil
}

func (f *fakeBackend) Run(ctx context.Context, req core.Request) (*core.Result, *fault.Error) {
	return f.run(ctx, req)
}

// manyTools returns n tools spread over namespaces ns0, ns1, ….
func manyTools(n, namespaces int) []tools.Definition {
	var defs []tools.Definition
	for i := range n {
		defs = append(defs, tools.Definition{Name: fmt.Sprintf("ns%d.tool_with_a_long_name_%03d", i%namespaces, i),
			Description: "Does one thing among many.", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)})
	}
	return defs
}

// TestDescriptionThreshold: execute's description declares the tools while
// the declarations fit in DescriptionBytes; past that it lists their names
// (or their namespaces) and points to search.
func TestDescriptionThreshold(t *testing.T) {
	cases := []struct {
		name    string
		defs    []tools.Definition
		bytes   int
		want    []string
		notWant []string
	}{
		{"inline", manyTools(10, 2), 0, []string{"The 10 tools, declared in TypeScript", "tool_with_a_long_name_009(args?: Ns1ToolWithALongName009Input)"}, []string{"call search"}},
		{"names", manyTools(10, 2), 500, []string{"10 tools are available; their declarations are too long", "Call search", "tools.$search", "- ns0: tool_with_a_long_name_000, tool_with_a_long_name_002"}, []string{"declare const tools"}},
		{"never inline", manyTools(2, 1), -1, []string{"2 tools are available", "- ns0: tool_with_a_long_name_000, tool_with_a_long_name_001"}, []string{"declare const tools"}},
		{"namespaces", manyTools(2000, 40), 0, []string{"2000 tools are available", "Namespaces (tools.<namespace>.<tool>):", "- ns0 (50 tools)", "- ns39 (50 tools)"}, []string{"declare const tools", "tool_with_a_long_name_000"}},
		{"too many namespaces", manyTools(2000, 2000), 0, []string{"2000 tools are available", "- ns0 (1 tool)", "more namespaces"}, []string{"declare const tools"}},
		{"one tool inline", manyTools(1, 1), 0, []string{"The one tool, declared in TypeScript"}, []string{"1 tools", "call search"}},
		{"one tool never inline", manyTools(1, 1), -1, []string{"1 tool is available", "- ns0: tool_with_a_long_name_000"}, []string{"1 tools", "declare const tools"}},
		{"no tools", nil, 0, []string{"No tools are available to you"}, []string{"declare const tools"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{defs: tc.defs}
			cs := connect(t, mcpserve.New(mcpserve.Config{Backend: b, DescriptionBytes: tc.bytes}), nil)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			d := res.Tools[0].Description
			for _, w := range tc.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q:\n%s", w, d)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(d, w) {
					t.Errorf("description has %q:\n%s", w, d)
				}
			}
			if limit := max(tc.bytes, mcpserve.DefaultDescriptionBytes); len(d) > limit+2048 {
				t.Errorf("description is %d bytes", len(d))
			}
		})
	}
}
