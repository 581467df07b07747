package python

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// demoTools are the demo tools compiled.
func demoTools(tb testing.TB) []*tools.Compiled {
	tb.Helper()
	var ts []*tools.Compiled
	for _, tool := range demo.Tools() {
		c, err := tools.Compile(tool)
		if err != nil {
			tb.Fatal(err)
		}
		ts = append(ts, c)
	}
	return ts
}

// TestExpensesExample runs examples/expenses.py against the demo tools:
// it returns exactly what examples/expenses.js does.
func TestExpensesExample(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "expenses.py"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "examples", "expenses.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	j, d := job(string(src), "", limits.Limits{}, demoTools(t))
	out := engine(t).Run(context.Background(), j)
	if out.Err != nil {
		t.Fatalf("expenses.py failed: %v\n%s", out.Err, out.Err.Stack)
	}
	var g, w any
	if err := json.Unmarshal(out.Result, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("result %s, want %s", out.Result, want)
	}
	if d.Calls() != 26 {
		t.Errorf("%d tool calls, want 26", d.Calls())
	}
	logs, _ := j.Logs.Entries()
	if len(logs) != 1 || !strings.Contains(logs[0].Message, "members over their travel budget") {
		t.Errorf("logs %+v, want the summary line", logs)
	}
}
