package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ptcrun/ptc"
)

// TestWorkerIsolation: ptcd runs scripts in worker processes by default: a
// memory bomb ends as MEMORY_LIMIT without hurting the server, and the
// next execution (TypeScript here) runs normally.
func TestWorkerIsolation(t *testing.T) {
	addr, _, _ := startPtcd(t, "--demo-tools", "--workers.idle", "1")
	c, err := ptc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Execute(context.Background(), ptc.Request{
		Source: `let s = "x"; for (;;) s += s;`,
		// Time enough for a loaded machine or the race detector to reach
		// the memory limit: time is not what it checks.
		Limits: ptc.Limits{MemoryBytes: 64 << 20, CPUTime: time.Minute, Timeout: 2 * time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Kind != ptc.KindMemoryLimit || res.Error.Limit != 64<<20 {
		t.Fatalf("error %+v", res.Error)
	}
	src, err := os.ReadFile("../../examples/expenses.ts")
	if err != nil {
		t.Fatal(err)
	}
	res, err = c.Execute(context.Background(), ptc.Request{Language: ptc.LanguageTypeScript, Source: string(src), Deterministic: true, Seed: 7})
	if err != nil || res.Error != nil {
		t.Fatal(err, res.Error)
	}
	if res.Stats.ToolCalls != 26 || res.Stats.PeakMemoryBytes == 0 {
		t.Fatalf("stats %+v", res.Stats)
	}
	// Deterministic executions replay the same in worker processes as in
	// process.
	det := ptc.Request{Source: `return [Math.random(), Date.now()]`, Deterministic: true, Seed: 42}
	remote, err := c.Execute(context.Background(), det)
	if err != nil || remote.Error != nil {
		t.Fatal(err, remote.Error)
	}
	r, _ := ptc.NewRunner()
	local, err := r.Execute(context.Background(), det)
	if err != nil || string(local.Result) != string(remote.Result) {
		t.Fatalf("worker %s, in-process %s (%v)", remote.Result, local.Result, err)
	}
}
