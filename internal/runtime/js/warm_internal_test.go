package js

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
)

// testJob is a job of src under lim, with no tools and a null input.
func testJob(src string, lim limits.Limits) *runtime.Job {
	return &runtime.Job{ExecutionID: "w", Source: src, Input: json.RawMessage(`null`), Limits: lim,
		Tools: bridge.New(bridge.Config{MaxConcurrent: 1}), Logs: runtime.NewLogBuffer(time.Now(), lim, nil)}
}

// TestWarmTakesTheLatestProgramsGroups: a runtime Warm makes gets the
// guard groups of the latest program run on the Engine (groupSizes
// before any): a program that reads no property does not have the
// prototypes' size guards made ahead for its next execution, and one that
// reads a property has them again. Both paths record the program: a run
// in a warm runtime and RunSource.
func TestWarmTakesTheLatestProgramsGroups(t *testing.T) {
	e := New()
	lim := limits.DefaultPolicy().Resolve(limits.Limits{}, limits.Limits{})
	job := func(src string) *runtime.Job { return testJob(src, lim) }
	ahead := func() group {
		x, err := e.prepare(e.aheadGroups())
		if err != nil {
			t.Fatal(err)
		}
		return x.installed
	}
	if ahead()&groupSizes == 0 {
		t.Fatal("before any program, a runtime made ahead lacks the size guards")
	}
	steps := []struct {
		src       string
		warm      bool
		wantSizes bool
	}{
		{`return {ok: 1}`, true, false},
		{`const o = {ok: 1}; return o.ok`, true, true},
		{`return {ok: 1}`, false, false},
		{`return [1, 2].length`, false, true},
	}
	for _, s := range steps {
		var out *runtime.Outcome
		if s.warm {
			run, err := e.Warm()
			if err != nil {
				t.Fatal(err)
			}
			out = run(context.Background(), job(s.src), Source{Code: s.src})
		} else {
			out = e.RunSource(context.Background(), job(s.src), Source{Code: s.src})
		}
		if out.Err != nil {
			t.Fatalf("%s: %v", s.src, out.Err)
		}
		if got := ahead()&groupSizes != 0; got != s.wantSizes {
			t.Fatalf("after %s (warm %v): size guards made ahead %v, want %v", s.src, s.warm, got, s.wantSizes)
		}
	}
}

// BenchmarkPrepare measures making a runtime ahead (prepare) for a
// program that needs no guard group (`return {ok: 1}`): what the refill
// goroutine does before each in-process execution and a worker's warmer
// between executions.
func BenchmarkPrepare(b *testing.B) {
	e := New()
	g, _, _ := scan(bodyPrefix + `return {ok: 1}` + bodySuffix)
	newExec(e).newRuntime() // the first counts every built-in
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.prepare(g); err != nil {
			b.Fatal(err)
		}
	}
}
