package ptc_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools/demo"
)

// BenchmarkResume measures a resume in-process as a function of the calls
// the execution made before it paused: the script makes N awaited calls,
// pauses at a client tool, and ends once answered. "rerun" resumes on a
// runner that keeps nothing in memory (the script is re-run and fed the
// journal); "parked" resumes the execution kept in memory. Only the
// resume is timed.
func BenchmarkResume(b *testing.B) {
	for _, mode := range []string{"rerun", "parked"} {
		for _, n := range []int{0, 5, 20, 100} {
			b.Run(fmt.Sprintf("%s/calls=%d", mode, n), func(b *testing.B) {
				benchResume(b, mode, fmt.Sprintf(`
					let s = 0;
					for (let i = 0; i < %d; i++) s += (await tools.get_budget_by_level({level: "senior"})).travel_limit;
					const x = await tools.ask({});
					return s + x;`, n), nil, "ask")
			})
		}
	}
}

// BenchmarkResumeExpense resumes the expense example paused at its budget
// lookups (approvals), after its 21 earlier calls (about 200 KB of tool
// results): the resume includes the rest of the script (the lookups, and
// the sums over 2,000 items). "end" pauses it once more after everything,
// at a client tool, to time the resume alone. "worker" re-runs the
// segment in a worker process, as ptcd does by default (JavaScript in a
// worker is never parked). It reports the continuation's size.
func BenchmarkResumeExpense(b *testing.B) {
	src, err := os.ReadFile("examples/expenses.js")
	if err != nil {
		b.Fatal(err)
	}
	atEnd := strings.Replace(string(src), "return over;", "await tools.ask({});\nreturn over;", 1)
	for _, mode := range []string{"rerun", "parked", "worker"} {
		b.Run(mode, func(b *testing.B) {
			benchResume(b, mode, string(src), []string{"get_budget_by_level"}, "")
		})
		b.Run(mode+"/end", func(b *testing.B) {
			benchResume(b, mode, atEnd, nil, "ask")
		})
	}
}

func benchResume(b *testing.B, mode, src string, approve []string, client string) {
	var runs atomic.Int64
	parked := -1
	if mode == "parked" {
		parked = 0
	}
	opts := []ptc.Option{ptc.WithTools(demo.Tools()...), ptc.WithTools(mailTool(&runs)),
		ptc.WithDurable(ptc.Durable{Keys: testKeys, SigningKey: "k1", Parked: parked})}
	if mode == "worker" {
		opts = append(opts, ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true}))
	}
	r, err := ptc.NewRunner(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	req := ptc.Request{Source: src, Resumable: true, RequireApproval: approve}
	if client != "" {
		req.ClientTools = append(req.ClientTools, askUser)
		req.ClientTools[0].Name = client
		req.ClientTools[0].OutputSchema = nil
	}
	ctx := context.Background()
	size := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		res, err := r.Execute(ctx, req)
		if err != nil || !res.RequiresAction() {
			b.Fatal(err, res.Error)
		}
		size = len(res.Continuation)
		var answers []ptc.Answer
		for _, a := range res.Pending {
			if a.Approval {
				answers = append(answers, ptc.Answer{CallID: a.CallID, Approve: true})
			} else {
				answers = append(answers, ptc.Answer{CallID: a.CallID, Output: []byte("1")})
			}
		}
		b.StartTimer()
		out, err := r.Resume(ctx, res.Continuation, answers...)
		if err != nil || out.Error != nil || out.RequiresAction() {
			b.Fatal(err, out.Error)
		}
	}
	b.ReportMetric(float64(size), "token-bytes")
}

// BenchmarkResumeRetry times a retried Resume of the expense example
// (paused at its budget lookups): the same continuation and answers again
// after the resume ended, answered from the outcome kept in memory
// (decrypted, decompressed and decoded; nothing runs).
func BenchmarkResumeRetry(b *testing.B) {
	src, err := os.ReadFile("examples/expenses.js")
	if err != nil {
		b.Fatal(err)
	}
	var runs atomic.Int64
	r, err := ptc.NewRunner(ptc.WithTools(demo.Tools()...), ptc.WithTools(mailTool(&runs)),
		ptc.WithDurable(ptc.Durable{Keys: testKeys, SigningKey: "k1"}))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	res, err := r.Execute(ctx, ptc.Request{Source: string(src), Resumable: true, RequireApproval: []string{"get_budget_by_level"}})
	if err != nil || !res.RequiresAction() {
		b.Fatal(err, res.Error)
	}
	var answers []ptc.Answer
	for _, a := range res.Pending {
		answers = append(answers, ptc.Answer{CallID: a.CallID, Approve: true})
	}
	first, err := r.Resume(ctx, res.Continuation, answers...)
	if err != nil || first.Error != nil {
		b.Fatal(err, first.Error)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := r.Resume(ctx, res.Continuation, answers...)
		if err != nil || string(out.Result) != string(first.Result) {
			b.Fatal(err)
		}
	}
}
