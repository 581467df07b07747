package tools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ptcrun/ptc/tools"
)

// A caller that compiles the same tools again and again (a server given
// its clients' tools with every request) compiles each schema once.
func ExampleCompileWith() {
	cache := map[string]*tools.Schema{}
	compiled := 0
	schema := func(raw json.RawMessage) (*tools.Schema, error) {
		if s, ok := cache[string(raw)]; ok {
			return s, nil
		}
		s, err := tools.CompileSchema(raw)
		if err == nil {
			cache[string(raw)] = s
			compiled++
		}
		return s, err
	}
	tool := tools.Tool{
		Definition: tools.Definition{Name: "add", InputSchema: json.RawMessage(`{"type":"object","required":["n"]}`)},
		Handler:    func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`1`), nil },
	}
	for range 3 {
		if _, err := tools.CompileWith(tool, schema); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("schemas compiled:", compiled)
	// Output: schemas compiled: 1
}
