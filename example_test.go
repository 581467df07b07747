package ptc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

// A runner with one Go tool; the script calls it three times concurrently
// and returns only the sum.
func ExampleRunner_Execute() {
	add := tools.Tool{
		Definition: tools.Definition{
			Name:        "add",
			Description: "Add two numbers.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		},
		Handler: func(ctx context.Context, call tools.Call) (json.RawMessage, error) {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(call.Arguments, &in); err != nil {
				return nil, err
			}
			return json.Marshal(in.A + in.B)
		},
	}
	r, err := ptc.NewRunner(ptc.WithTools(add))
	if err != nil {
		panic(err)
	}
	res, err := r.Execute(context.Background(), ptc.Request{
		Source: `const sums = await Promise.all([1, 2, 3].map(n => tools.add({a: n, b: input.offset})));
return {total: sums.reduce((x, y) => x + y, 0)};`,
		Input: json.RawMessage(`{"offset": 10}`),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Result), res.Stats.ToolCalls)
	// Output: {"total":36} 3
}

// A failing script gives a classified error and a message for the model.
func ExampleRunner_Execute_error() {
	r, _ := ptc.NewRunner()
	res, _ := r.Execute(context.Background(), ptc.Request{Source: "const x = 1;\nreturn x.y.z;"})
	fmt.Println(res.Error.Kind, res.Error.Line)
	fmt.Println(res.ModelMessage)
	// Output:
	// SCRIPT_ERROR 2
	// The script failed with SCRIPT_ERROR at line 2, column 12: uncaught TypeError: Cannot read property 'z' of undefined. Fix the script at the reported line and try again.
}

// CodeOf and KindOf tell a request that did not run from a script that
// ran and failed, for a Runner and a Client alike.
func ExampleKindOf() {
	r, _ := ptc.NewRunner()
	defer r.Close()
	ctx := context.Background()

	_, err := r.Execute(ctx, ptc.Request{Source: ""}) // refused: nothing ran
	fmt.Println(ptc.CodeOf(err), ptc.KindOf(err))

	res, _ := r.Execute(ctx, ptc.Request{Source: `throw new Error("no")`}) // ran and failed
	fmt.Println(ptc.CodeOf(res.Error), ptc.KindOf(res.Error))
	fmt.Println(errors.Is(res.Error, &ptc.ExecutionError{Kind: ptc.KindScript}))
	// Output:
	// INVALID_ARGUMENT UNSPECIFIED
	// OK SCRIPT_ERROR
	// true
}
