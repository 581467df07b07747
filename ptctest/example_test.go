package ptctest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/ptctest"
)

// exampleT stands in for the *testing.T a test function receives, so that
// the examples can run and show their output.
// Failures are printed with dir shortened to "DIR".
type exampleT struct {
	testing.TB
	dir string
}

func (exampleT) Helper() {}

func (e exampleT) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if e.dir != "" {
		msg = strings.ReplaceAll(msg, e.dir, "DIR")
	}
	fmt.Println("FAIL: " + msg)
}

func (exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// A script run against fake tools: a static team, and a budget tool that is
// rate limited once before it answers.
func ExampleRun() {
	var t testing.TB = exampleT{} // in a test: the *testing.T

	script := `
const team = await tools.get_team_members({ department: "sales" });
let budget;
for (;;) {
  try { budget = await tools.get_budget_by_level({ level: team[0].level }); break; }
  catch (err) { if (err.code !== "rate_limited") throw err; }
}
return { lead: team[0].name, limit: budget.travel_limit };`

	res := ptctest.Run(t, script, ptctest.WithFakes(
		ptctest.Static("get_team_members", []map[string]string{{"id": "sal-01", "name": "Ana Lima", "level": "senior"}}),
		ptctest.Sequence("get_budget_by_level",
			ptctest.Fail("rate_limited", "retry in a second"),
			map[string]any{"level": "senior", "travel_limit": 3000}),
	))
	ptctest.AssertCalls(t, res, "get_team_members", "get_budget_by_level", "get_budget_by_level")
	ptctest.AssertResult(t, res, map[string]any{"lead": "Ana Lima", "limit": 3000})
	fmt.Println(string(res.Result))
	// Output: {"lead":"Ana Lima","limit":3000}
}

// Answers chosen by a subset of the arguments.
func ExampleFake_When() {
	var t testing.TB = exampleT{}

	levels := ptctest.Static("get_budget_by_level", ptctest.Fail("not_found", "no such level")).
		When(map[string]string{"level": "mid"}, map[string]any{"level": "mid", "travel_limit": 2000})

	res := ptctest.Run(t, `
const mid = await tools.get_budget_by_level({ level: "mid" });
try { await tools.get_budget_by_level({ level: "staff" }) } catch (err) { return [mid.travel_limit, err.code] }`,
		ptctest.WithFakes(levels))
	ptctest.AssertCall(t, res, 2, "get_budget_by_level", map[string]string{"level": "staff"})
	fmt.Println(string(res.Result))
	// Output: [2000,"not_found"]
}

// A script that must fail with a given error kind.
func ExampleAssertError() {
	var t testing.TB = exampleT{}

	res := ptctest.Run(t, `for (;;) await tools.get_budget_by_level({ level: "mid" })`,
		ptctest.WithDemoTools(), ptctest.WithLimits(ptc.Limits{MaxToolCalls: 3}))
	fmt.Println(ptctest.AssertError(t, res, ptc.KindToolCallLimit, "limit of 3 calls"))
	// Output: true
}

// Record an execution against the real tools once, then replay it in later
// tests without calling any tool; a change in the script's calls or result
// is reported as a replay divergence.
func ExampleReplay() {
	dir, _ := os.MkdirTemp("", "ptctest")
	var t testing.TB = exampleT{dir: dir}
	defer os.RemoveAll(dir)
	tape := filepath.Join(dir, "budget.jsonl")

	script := `const b = await tools.get_budget_by_level({ level: "staff" }); return b.travel_limit`
	ptctest.Run(t, script, ptctest.WithDemoTools(), ptctest.WithRecord(tape))

	res := ptctest.Replay(t, tape)
	fmt.Println(string(res.Result))

	ptctest.Replay(t, tape, ptctest.WithScript(`return (await tools.get_budget_by_level({ level: "mid" })).travel_limit`))
	// Output:
	// 4000
	// FAIL: ptctest: DIR/budget.jsonl: replay divergence at call #1 (get_budget_by_level): the arguments differ from the recording
	//   recorded: {"level":"staff"}
	//   actual:   {"level":"mid"}
	//   diff (recorded → actual):
	//     /level: "staff" → "mid"
}
