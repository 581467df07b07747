package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// clientTool is a client tool with the given schemas.
func clientTool(name string, in, out json.RawMessage) tools.Tool {
	return tools.Tool{
		Definition: tools.Definition{Name: name, InputSchema: in, OutputSchema: out},
		Handler:    okHandler,
	}
}

// schemaOf prepares req for tenant and returns the compiled input and
// output schemas of its client tool name and its result schema.
func schemaOf(t *testing.T, e *Executor, req core.Request, tenant, name string) (in, out, result *tools.Schema) {
	t.Helper()
	req.Tenant = tenant
	p, ferr := e.Prepare(req, limits.Limits{})
	if ferr != nil {
		t.Fatal(ferr)
	}
	for _, c := range p.tools {
		if c.Name == name {
			return c.Input, c.Output, p.result
		}
	}
	t.Fatalf("tool %s not prepared", name)
	return nil, nil, nil
}

// wideSchema is an object schema with n string properties (more than 2n
// values).
func wideSchema(n int) json.RawMessage {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string"}`, i)
	}
	return json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)
}

// TestSchemaCache: the schemas of client tools and the result schema
// that a tenant sends again are compiled once and shared; another tenant's
// identical schemas are compiled for it; schemas past
// maxCachedSchemaValues and schemas that do not compile are not kept.
func TestSchemaCache(t *testing.T) {
	e := newExecutor(t, Config{})
	in := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	out := json.RawMessage(`{"type":"array","items":{"type":"number"}}`)
	res := json.RawMessage(`{"type":"object"}`)
	req := core.Request{Script: core.Script{Source: "return 1"}, ClientTools: []tools.Tool{clientTool("ask", in, out)}, ResultSchema: res}

	in1, out1, res1 := schemaOf(t, e, req, "a", "ask")
	in2, out2, res2 := schemaOf(t, e, req, "a", "ask")
	if in1 != in2 || out1 != out2 || res1 != res2 {
		t.Fatal("a tenant's second request compiled its schemas again")
	}
	if in1 == out1 {
		t.Fatal("two different schemas share one compiled schema")
	}
	in3, out3, res3 := schemaOf(t, e, req, "b", "ask")
	if in3 == in1 || out3 == out1 || res3 == res1 {
		t.Fatal("another tenant was given the first tenant's compiled schemas")
	}

	// The same schema under another tool name is the same schema.
	other := req
	other.ClientTools = []tools.Tool{clientTool("ask2", in, out)}
	if in4, _, _ := schemaOf(t, e, other, "a", "ask2"); in4 != in1 {
		t.Fatal("the same bytes under another tool's name were compiled again")
	}

	// A schema past the bound is compiled for each request, and checks
	// arguments all the same.
	wide := wideSchema(maxCachedSchemaValues)
	big := req
	big.ClientTools = []tools.Tool{clientTool("wide", wide, nil)}
	w1, _, _ := schemaOf(t, e, big, "a", "wide")
	w2, _, _ := schemaOf(t, e, big, "a", "wide")
	if w1.Values() <= maxCachedSchemaValues {
		t.Fatalf("the wide schema has %d values, within the cache's bound", w1.Values())
	}
	if w1 == w2 {
		t.Fatal("a schema past maxCachedSchemaValues was kept")
	}
	if vs, err := w2.Validate(json.RawMessage(`{"p0":1}`)); err != nil || len(vs) == 0 {
		t.Fatalf("the wide schema accepted a number for a string: %v %v", vs, err)
	}

	// A schema that does not compile is refused every time.
	bad := req
	bad.ClientTools = []tools.Tool{clientTool("bad", json.RawMessage(`{"type":"no-such-type"}`), nil)}
	for range 2 {
		_, ferr := e.Prepare(bad, limits.Limits{})
		if ferr == nil || ferr.Code != fault.CodeInvalidArgument || !strings.Contains(ferr.Message, `client_tools: tool "bad": input schema`) {
			t.Fatalf("bad schema: %v", ferr)
		}
	}
}

// TestSchemaCacheChecks: a client tool whose schema came from the cache
// still checks its calls' arguments in an execution.
func TestSchemaCacheChecks(t *testing.T) {
	e := newExecutor(t, Config{})
	in := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`)
	src := `try { await tools.add({n: "x"}); return "accepted"; } catch (e) { return e.code; }`
	for i := range 3 {
		req := core.Request{Script: core.Script{Source: src}, ClientTools: []tools.Tool{clientTool("add", in, nil)}, Tenant: "a"}
		res, err := e.Execute(context.Background(), req, limits.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Error != nil || string(res.Result) != `"invalid_arguments"` {
			t.Fatalf("run %d: %s %v", i, res.Result, res.Error)
		}
	}
}

// BenchmarkPrepareClientTools prepares a request with ten client tools
// of 25-value schemas, as a harness sends with each request: their
// schemas come from the cache after the first.
func BenchmarkPrepareClientTools(b *testing.B) {
	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ts := make([]tools.Tool, 10)
	for i := range ts {
		ts[i] = clientTool(fmt.Sprintf("t%d", i), json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"member_id":{"type":"string","description":"The member's id (%d)"},"quarter":{"type":"string","enum":["Q1","Q2","Q3","Q4"]},"limit":{"type":"integer","minimum":1,"maximum":100},"tags":{"type":"array","items":{"type":"string"}}},"required":["member_id","quarter"],"additionalProperties":false}`, i)), nil)
	}
	req := core.Request{Script: core.Script{Source: "return 1"}, ClientTools: ts}
	b.ReportAllocs()
	for b.Loop() {
		if _, ferr := e.Prepare(req, limits.Limits{}); ferr != nil {
			b.Fatal(ferr)
		}
	}
}
