package ptc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/prompt"
	"github.com/ptcrun/ptc/tools"
)

// isolations are the in-process engine and worker processes.
var isolations = []struct {
	name string
	iso  ptc.Isolation
}{
	{"inprocess", ptc.Isolation{}},
	{"worker", ptc.Isolation{WorkerProcesses: true, Idle: -1, Max: 2}},
}

// TestTruncateResult: with the overflow policy truncate an over-size result
// is cut to the cap, stays valid JSON, and the stats and model message say
// so; a result that cannot be cut below the cap still fails, and so does
// every over-size result without the policy.
func TestTruncateResult(t *testing.T) {
	cases := []struct {
		name     string
		src      string
		limits   ptc.Limits
		truncate bool
		want     string // the result, or the error kind and a message part
		dropped  int64
		cut      int64
	}{
		{"nested arrays", `return {rows: Array.from({length: 50}, (_, i) => ({i, tags: ["a", "b"]})), total: 50}`,
			ptc.Limits{MaxOutputBytes: 200}, true,
			`{"rows":[{"i":0,"tags":["a","b"]},{"i":1,"tags":["a","b"]},{"i":2,"tags":["a","b"]},{"i":3,"tags":["a","b"]},{"i":4,"tags":["a","b"]},{"i":5,"tags":["a","b"]},"[truncated: 44 more items]"],"total":50}`, 44, 0},
		{"long string", `return {text: "x".repeat(5000)}`, ptc.Limits{MaxOutputBytes: 64}, true,
			`{"text":"xxxxxxxxxxxxxxxxxxxxxx…[truncated: 4978 more bytes]"}`, 0, 1},
		{"fits untouched", `return [1, 2, 3]`, ptc.Limits{MaxOutputBytes: 64}, true, `[1,2,3]`, 0, 0},
		{"cannot be truncated", `return 1234567890123`, ptc.Limits{MaxOutputBytes: 10}, true,
			"OUTPUT_LIMIT: the result is 13 bytes of JSON and cannot be truncated to the 10 allowed: its smallest truncated form is 13 bytes", 0, 0},
		{"marker does not fit", `return Array.from({length: 100}, (_, i) => i)`, ptc.Limits{MaxOutputBytes: 16}, true,
			"OUTPUT_LIMIT: the result is 291 bytes of JSON and cannot be truncated to the 16 allowed: its smallest truncated form is 31 bytes", 0, 0},
		{"too many values to truncate", `const a = new Array(1000).fill(0); return new Array(16000).fill(a)`, ptc.Limits{MaxOutputBytes: 1024}, true,
			"OUTPUT_LIMIT: the result is 32032001 bytes of JSON with more than 524288 values, more than the overflow policy truncate cuts down; return less", 0, 0},
		{"many values truncated", `const a = new Array(1000).fill(0); return new Array(500).fill(a)`, ptc.Limits{MaxOutputBytes: 1024}, true, "", 1019, 0},
		{"over the cap without the policy", `return "x".repeat(100)`, ptc.Limits{MaxOutputBytes: 64}, false,
			"OUTPUT_LIMIT: the result is at least 102 bytes of JSON, more than the 64 allowed", 0, 0},
		{"over the token limit", `return "lorem ipsum ".repeat(200)`, ptc.Limits{MaxResultTokens: 50}, false,
			"OUTPUT_LIMIT: the result is about 402 tokens of JSON, more than the 50 allowed (max_result_tokens)", 0, 0},
		{"truncated to the token limit", `return "lorem ipsum ".repeat(200)`, ptc.Limits{MaxResultTokens: 50}, true, "", 0, 1},
	}
	for _, is := range isolations {
		r, err := ptc.NewRunner(ptc.WithIsolation(is.iso))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for _, tc := range cases {
			t.Run(is.name+"/"+tc.name, func(t *testing.T) {
				// Time enough for a race-instrumented worker (several
				// times slower) to build a 32 MB result: time is not what
				// any case checks.
				lim := tc.limits
				lim.CPUTime, lim.Timeout = 2*time.Minute, 5*time.Minute
				res, err := r.Execute(context.Background(), ptc.Request{Source: tc.src, Limits: lim, TruncateResult: tc.truncate})
				if err != nil {
					t.Fatal(err)
				}
				if kind, msg, isErr := strings.Cut(tc.want, ": "); isErr && strings.HasSuffix(kind, "LIMIT") {
					if res.Error == nil || res.Error.Kind.String() != kind || !strings.Contains(res.Error.Message, msg) {
						t.Fatalf("error %v, want %s", res.Error, tc.want)
					}
					if res.Stats.ResultTruncated || !strings.Contains(res.ModelMessage, "OUTPUT_LIMIT") {
						t.Fatalf("stats %+v, model message %q", res.Stats, res.ModelMessage)
					}
					return
				}
				if res.Error != nil {
					t.Fatal(res.Error)
				}
				if tc.want != "" && string(res.Result) != tc.want {
					t.Fatalf("result %s\nwant   %s", res.Result, tc.want)
				}
				if !json.Valid(res.Result) {
					t.Fatalf("invalid JSON %s", res.Result)
				}
				st := res.Stats
				truncated := tc.dropped+tc.cut > 0
				if st.ResultTruncated != truncated || st.DroppedItems != tc.dropped || st.CutStrings != tc.cut || st.OutputBytes != int64(len(res.Result)) {
					t.Fatalf("stats %+v", st)
				}
				if max := res.EffectiveLimits.MaxOutputBytes; int64(len(res.Result)) > max {
					t.Fatalf("%d bytes, cap %d", len(res.Result), max)
				}
				if max := int(res.EffectiveLimits.MaxResultTokens); prompt.ApproxTokens(string(res.Result)) > max {
					t.Fatalf("%d tokens, cap %d", prompt.ApproxTokens(string(res.Result)), max)
				}
				if !truncated {
					if res.ModelMessage != string(res.Result) || st.UntruncatedOutputBytes != 0 {
						t.Fatalf("model message %q, stats %+v", res.ModelMessage, st)
					}
					return
				}
				note := fmt.Sprintf("(ptc: this result was truncated from %d to %d bytes of JSON to fit the output limits", st.UntruncatedOutputBytes, st.OutputBytes)
				if st.UntruncatedOutputBytes <= st.OutputBytes || !strings.HasPrefix(res.ModelMessage, string(res.Result)+"\n") || !strings.Contains(res.ModelMessage, note) {
					t.Fatalf("model message %q, stats %+v", res.ModelMessage, st)
				}
			})
		}
	}
}

// TestModelMessageHoldsOnlyTheResult: logs, the trace and tool results the
// script did not return never reach model_message — on success, on a
// failure, on an output breach and on a truncated result.
func TestModelMessageHoldsOnlyTheResult(t *testing.T) {
	const secret = "SECRET-VALUE-7f3a"
	leak := tools.Tool{
		Definition: tools.Definition{Name: "vault", Description: "returns a secret",
			InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			return json.Marshal(map[string]string{"token": secret + "-result", "note": "kept"})
		},
	}
	prefix := `const v = await tools.vault({hint: "` + secret + `-arg"}); console.log("` + secret + `-log", v.token); `
	scripts := map[string]string{
		"success":      prefix + `return {note: v.note}`,
		"script error": prefix + `throw new Error("boom")`,
		"output limit": prefix + `return "x".repeat(5000)`,
		"truncated":    prefix + `return {note: v.note, filler: "y".repeat(5000)}`,
		"tool error":   prefix + `await tools.missing({}); return 1`,
		"timeout":      prefix + `for (;;) {}`,
	}
	for _, is := range isolations {
		r, err := ptc.NewRunner(ptc.WithIsolation(is.iso), ptc.WithTools(leak))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for name, src := range scripts {
			t.Run(is.name+"/"+name, func(t *testing.T) {
				// Only the endless loop needs a short timeout.
				timeout := 30 * time.Second
				if name == "timeout" {
					timeout = 2 * time.Second
				}
				res, err := r.Execute(context.Background(), ptc.Request{Source: src, IncludeToolResults: true,
					TruncateResult: name == "truncated", Limits: ptc.Limits{MaxOutputBytes: 1000, Timeout: timeout}})
				if err != nil {
					t.Fatal(err)
				}
				// The secret is in the logs and the trace, never in the
				// model message.
				trace, _ := json.Marshal(res.Trace)
				if !strings.Contains(string(trace), secret+"-arg") || !strings.Contains(string(trace), secret+"-result") {
					t.Fatalf("trace %s", trace)
				}
				if len(res.Logs) == 0 || !strings.Contains(res.Logs[0].Message, secret) {
					t.Fatalf("logs %+v", res.Logs)
				}
				if res.ModelMessage == "" || strings.Contains(res.ModelMessage, secret) {
					t.Fatalf("model message %q", res.ModelMessage)
				}
			})
		}
	}
}

// TestProgressInProcess: OnProgress sees every call start and finish with
// sizes and outcomes, values only with ProgressValues.
func TestProgressInProcess(t *testing.T) {
	echo := tools.Tool{Definition: tools.Definition{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }}
	src := `await tools.echo({a: 1}); try { await tools.nope({}) } catch (e) {} return 1`
	for _, is := range isolations {
		for _, values := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/values=%v", is.name, values), func(t *testing.T) {
				r, err := ptc.NewRunner(ptc.WithIsolation(is.iso), ptc.WithTools(echo))
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				var mu sync.Mutex
				var got []string
				res, err := r.Execute(context.Background(), ptc.Request{Source: src, ProgressValues: values, OnProgress: func(e ptc.ProgressEvent) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, fmt.Sprintf("#%d %s finished=%v args=%d res=%d outcome=%s values=%s|%s|%s",
						e.Seq, e.Tool, e.Finished, e.ArgumentBytes, e.ResultBytes, e.Outcome, e.Arguments, e.Result, e.ErrorMessage))
				}})
				succeeded(t, res, err)
				want := []string{
					"#1 echo finished=false args=7 res=0 outcome= values=||",
					"#1 echo finished=true args=7 res=7 outcome=ok values=||",
					"#2 nope finished=false args=2 res=0 outcome= values=||",
					"#2 nope finished=true args=2 res=0 outcome=unknown_tool values=||",
				}
				if values {
					want = []string{
						`#1 echo finished=false args=7 res=0 outcome= values={"a":1}||`,
						`#1 echo finished=true args=7 res=7 outcome=ok values={"a":1}|{"a":1}|`,
						`#2 nope finished=false args=2 res=0 outcome= values={}||`,
						`#2 nope finished=true args=2 res=0 outcome=unknown_tool values={}||unknown tool "nope"; available tools: echo`,
					}
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			})
		}
	}
}

// TestTruncateLargeResultMemory: the request seen in the field — a 64 MB
// result built from one array referenced 32,000 times, with the overflow
// policy truncate and a 1 KiB cap — never ends with a peak above the
// default memory limit unless it ends MEMORY_LIMIT; with more values than
// truncation cuts down it ends OUTPUT_LIMIT.
func TestTruncateLargeResultMemory(t *testing.T) {
	const src = `const a = new Array(1000).fill(0); return new Array(32000).fill(a)`
	const memory = 256 << 20 // the default memory limit
	for _, is := range isolations {
		t.Run(is.name, func(t *testing.T) {
			r, err := ptc.NewRunner(ptc.WithIsolation(is.iso))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// Time enough for a race-instrumented worker (several times
			// slower) to reach the output cap: time is not the subject.
			lim := ptc.Limits{MaxOutputBytes: 1024, CPUTime: 2 * time.Minute, Timeout: 5 * time.Minute}
			res, err := r.Execute(context.Background(), ptc.Request{Source: src, Limits: lim, TruncateResult: true})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case res.Error == nil:
				t.Fatalf("OK (%d bytes), want OUTPUT_LIMIT", len(res.Result))
			case res.Error.Kind == ptc.KindMemoryLimit:
				if res.Error.Limit != memory || res.Error.Observed <= memory {
					t.Fatalf("breach %+v", res.Error)
				}
			case res.Error.Kind != ptc.KindOutputLimit:
				t.Fatalf("error %v, want OUTPUT_LIMIT", res.Error)
			case res.Stats.PeakMemoryBytes > memory:
				t.Fatalf("peak %d bytes above the %d limit", res.Stats.PeakMemoryBytes, memory)
			}
		})
	}
}
