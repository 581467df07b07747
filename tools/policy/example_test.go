package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/policy"
)

func ExampleWrap() {
	attempts := 0
	flaky := tools.Tool{
		Definition: tools.Definition{Name: "weather.get"},
		Handler: func(ctx context.Context, call tools.Call) (json.RawMessage, error) {
			attempts++
			if attempts < 2 {
				// A 503 answer: worth trying again.
				return nil, policy.MarkTransient(tools.Errorf("http_503", "service unavailable"))
			}
			return json.RawMessage(`{"temp":21}`), nil
		},
	}
	tool := policy.Wrap(flaky, policy.Config{Timeout: time.Second, Retries: 2, BackoffBase: time.Millisecond})
	out, err := tool.Handler(context.Background(), tools.Call{ExecutionID: "e1", Seq: 1})
	fmt.Println(string(out), err, attempts)
	// Output: {"temp":21} <nil> 2
}
