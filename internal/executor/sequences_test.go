package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/tools"
)

// sideEffects records every run of a server tool by idempotency key.
type sideEffects struct {
	mu   sync.Mutex
	runs map[string]int
}

func (s *sideEffects) tool(name string, approval bool) tools.Tool {
	return tools.Tool{Definition: tools.Definition{Name: name, RequiresApproval: approval},
		Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
			s.mu.Lock()
			s.runs[c.IdempotencyKey]++
			s.mu.Unlock()
			return json.RawMessage(fmt.Sprintf("%q", name+":"+c.IdempotencyKey)), nil
		}}
}

// TestRandomPauseResumeSequences runs 1,000 generated scripts whose calls
// — server tools, client tools and approvals, started one at a time or
// together — pause them; each pause is answered in a random order, on the
// executor that parked it or on another one that shares its keys and
// store (a re-run), and old continuations are tried again. No server tool
// may run twice, an approved call runs once, a denied one never, a
// reused continuation is refused (or, retried with its answers, gives the
// outcome it gave), and every script returns what its answers make it
// return.
func TestRandomPauseResumeSequences(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	fx := &sideEffects{runs: map[string]int{}}
	store := durable.NewMemoryStore(0)
	keys := []durable.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}
	mk := func(parked int) *Executor {
		m, err := durable.New(durable.Config{Keys: keys, Store: store})
		if err != nil {
			t.Fatal(err)
		}
		reg := tools.NewRegistry()
		_ = reg.Register(fx.tool("count", false))
		_ = reg.Register(fx.tool("send", true))
		return newExecutor(t, Config{Registry: reg, Durable: m, Parked: ParkedConfig{Max: parked}})
	}
	execs := []*Executor{mk(0), mk(0), mk(-1)}
	pauses, reruns := 0, 0
	denied := map[string]bool{}
	for i := 0; i < n; i++ {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		src, kinds := genScript(rng)
		id := fmt.Sprintf("seq-%d", i)
		e := execs[rng.IntN(len(execs))]
		res, ferr := e.Execute(context.Background(), core.Request{ExecutionID: id, Script: core.Script{Source: src},
			Resumable: true, ClientTools: []tools.Tool{askTool}}, tenantNone)
		if ferr != nil {
			t.Fatalf("%s: %v", id, ferr)
		}
		want := map[int32]string{}
		var used []string
		for len(res.Pending) > 0 {
			pauses++
			var answers []core.Answer
			for _, a := range res.Pending {
				switch a.Kind {
				case core.ActionClientTool:
					v := fmt.Sprintf("ask%d", rng.IntN(100))
					answers = append(answers, core.Answer{CallID: a.CallID, Output: json.RawMessage(fmt.Sprintf("%q", v))})
					want[a.Seq] = v
				case core.ActionApproval:
					if rng.IntN(2) == 0 {
						answers = append(answers, core.Answer{CallID: a.CallID, Approve: true})
						want[a.Seq] = "send:" + id + "/" + fmt.Sprint(a.Seq)
					} else {
						answers = append(answers, core.Answer{CallID: a.CallID, Deny: true, Reason: "no " + a.CallID})
						want[a.Seq] = "denied:no " + a.CallID
						denied[a.IdempotencyKey] = true
					}
				}
			}
			rng.Shuffle(len(answers), func(i, j int) { answers[i], answers[j] = answers[j], answers[i] })
			next := execs[rng.IntN(len(execs))]
			if next != e || !e.parked.has(pauseIDOf(t, e, res.Continuation)) {
				reruns++
			}
			used = append(used, res.Continuation)
			p, ferr := next.PrepareResume(context.Background(), Resume{Continuation: res.Continuation, Answers: answers})
			if ferr != nil {
				t.Fatalf("%s: prepare: %v", id, ferr)
			}
			if res, ferr = next.Continue(context.Background(), p); ferr != nil {
				t.Fatalf("%s: continue: %v", id, ferr)
			}
			e = next
			// An old continuation never resumes twice: the last one, retried
			// with its answers, gives the same outcome (the store is shared);
			// with other answers, or an older one, it is refused.
			i := rng.IntN(len(used))
			old, retried := used[i], i == len(used)-1
			if p, ferr := execs[rng.IntN(len(execs))].PrepareResume(context.Background(), Resume{Continuation: old, Answers: answers}); ferr == nil {
				got, ferr := e.Continue(context.Background(), p)
				switch {
				case retried && (ferr != nil || got.Continuation != res.Continuation || string(got.Result) != string(res.Result)):
					t.Fatalf("%s: a retry got another outcome: %v", id, ferr)
				case !retried && (ferr == nil || ferr.Code != fault.CodeFailedPrecondition):
					t.Fatalf("%s: a used continuation resumed again: %v", id, ferr)
				}
			} else if ferr.Code != fault.CodeFailedPrecondition && ferr.Code != fault.CodeInvalidArgument {
				t.Fatalf("%s: reuse: %v", id, ferr)
			}
		}
		if res.Error != nil {
			t.Fatalf("%s: %v\n%s", id, res.Error, src)
		}
		var got []string
		if err := json.Unmarshal(res.Result, &got); err != nil || len(got) != len(kinds) {
			t.Fatalf("%s: result %s", id, res.Result)
		}
		for j, k := range kinds {
			seq := int32(j + 1)
			w := want[seq]
			if k == "count" {
				w = "count:" + id + "/" + fmt.Sprint(seq)
			}
			if got[j] != w {
				t.Fatalf("%s: call #%d (%s) gave %q, want %q\n%s", id, seq, k, got[j], w, src)
			}
		}
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	for key, n := range fx.runs {
		if n != 1 || denied[key] {
			t.Fatalf("%s ran %d times (denied: %v)", key, n, denied[key])
		}
	}
	t.Logf("%d sequences, %d pauses, %d resumed by a re-run, %d server tool runs", n, pauses, reruns, len(fx.runs))
}

// tenantNone is the empty tenant ceilings.
var tenantNone = limitsZero()

// genScript generates a script of 1–6 steps, each starting 1–3 calls
// together, every call's outcome pushed in call order; it returns the
// script and the tool of each call, in call order.
func genScript(rng *rand.Rand) (string, []string) {
	var b strings.Builder
	b.WriteString("const out = [];\nconst put = (i, v) => { out[i] = v; };\n")
	b.WriteString("const call = (i, p) => p.then((v) => put(i, v), (e) => put(i, e.code + ':' + e.message));\n")
	var kinds []string
	names := []string{"count", "ask", "send"}
	for s := 0; s < 1+rng.IntN(6); s++ {
		var parts []string
		for c := 0; c < 1+rng.IntN(3); c++ {
			k := names[rng.IntN(len(names))]
			parts = append(parts, fmt.Sprintf("call(%d, tools.%s({step: %d, i: %d}))", len(kinds), k, s, c))
			kinds = append(kinds, k)
		}
		fmt.Fprintf(&b, "await Promise.all([%s]);\n", strings.Join(parts, ", "))
		if rng.IntN(2) == 0 {
			b.WriteString("Math.random(); Date.now();\n")
		}
	}
	b.WriteString("return out;\n")
	return b.String(), kinds
}

// pauseIDOf returns the pause id of a continuation e issued.
func pauseIDOf(t *testing.T, e *Executor, tok string) string {
	t.Helper()
	o, ferr := e.durable.Open(context.Background(), tok, "")
	if ferr != nil {
		return ""
	}
	return o.PauseID
}
