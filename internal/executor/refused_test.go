package executor

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/wire"
	"github.com/ptcrun/ptc/tools"
)

// countingStore counts the reads of stored states.
type countingStore struct {
	durable.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, id string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, id)
}

// pausedOnThree is an execution that pauses on three calls: c1 to a
// client tool without an output schema, c2 to one with one, c3 to a
// server tool that needs approval. Its input is inputBytes of
// incompressible text, so that its state is as large.
func pausedOnThree(tb testing.TB, e *Executor, inputBytes int) *core.Result {
	return pausedOnThreeWith(tb, e, inputBytes, `{"type":"integer"}`)
}

// pausedOnThreeWith is pausedOnThree with typed's output schema.
func pausedOnThreeWith(tb testing.TB, e *Executor, inputBytes int, schema string) *core.Result {
	tb.Helper()
	noise := make([]byte, inputBytes*3/4)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	in, _ := json.Marshal(base64.StdEncoding.EncodeToString(noise))
	res, ferr := e.Execute(context.Background(), core.Request{
		Script: core.Script{Source: `return await Promise.all([tools.ask({}), tools.typed({}), tools.send({})]);`},
		Input:  in, Resumable: true,
		ClientTools: []tools.Tool{askTool, {Definition: tools.Definition{Name: "typed", OutputSchema: json.RawMessage(schema)}}},
	}, limits.Limits{})
	if ferr != nil || len(res.Pending) != 3 || res.Continuation == "" {
		tb.Fatalf("pause: %v %+v", ferr, res)
	}
	return res
}

// storedExecutor is an executor whose paused states go to store (a
// continuation holds at most 1 KiB) and that parks none (parked < 0) or
// the default number of executions in memory.
func storedExecutor(tb testing.TB, store durable.Store, parked int) *Executor {
	tb.Helper()
	m, err := durable.New(durable.Config{Keys: []durable.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}},
		MaxTokenBytes: 1 << 10, Store: store})
	if err != nil {
		tb.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := reg.Register(approvalTool(nil)); err != nil {
		tb.Fatal(err)
	}
	e, err := New(Config{Registry: reg, Durable: m, Parked: ParkedConfig{Max: parked}, Outcomes: wire.Outcomes})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Close() })
	return e
}

var (
	ask1  = core.Answer{CallID: "c1", Output: json.RawMessage(`"x"`)}
	typed = core.Answer{CallID: "c2", Output: json.RawMessage(`1`)}
	send  = core.Answer{CallID: "c3", Approve: true}
)

// TestRefusedResumeReadsNoState: a Resume whose answers do not fit the
// pending calls is refused without reading the stored state, with the
// error the same answers get from the state itself (a parked execution's
// check). Only an output that the tool's output schema must decide needs
// the state, the first time: the schema is remembered for the pause then.
// Nothing is used up: the right answers still resume.
func TestRefusedResumeReadsNoState(t *testing.T) {
	parked := storedExecutor(t, durable.NewMemoryStore(0), 0)
	twin := pausedOnThree(t, parked, 8<<10)
	long := strings.Repeat("r", MaxReasonBytes+1)
	cases := []struct {
		name    string
		answers []core.Answer
		want    string
		// reads is how many times the first refusal reads the state
		// (the second reads it no more).
		reads int64
	}{
		{"unknown call id", []core.Answer{{CallID: "c9", Output: json.RawMessage(`1`)}}, `answers[0] (call_id "c9"): no pending call has this id; the pending calls are c1, c2, c3`, 0},
		{"no answers", nil, `call_id "c1" (tools.ask, waiting for its output) has no answer: answer every pending call`, 0},
		{"not JSON, no output schema", []core.Answer{{CallID: "c1", Output: json.RawMessage(`{`)}}, `answers[0] (call_id "c1", tools.ask): output is not valid JSON`, 0},
		{"not JSON, an output schema", []core.Answer{ask1, {CallID: "c2", Output: json.RawMessage(`[1,`)}}, `answers[1] (call_id "c2", tools.typed): output is not valid JSON`, 0},
		{"answered twice", []core.Answer{ask1, ask1}, `answers[1] (call_id "c1", tools.ask): the call is answered twice`, 0},
		{"approval for a client tool", []core.Answer{{CallID: "c1", Approve: true}}, "not an approval", 0},
		{"output for an approval", []core.Answer{{CallID: "c3", Output: json.RawMessage(`1`)}}, "approve or deny", 0},
		{"two outcomes", []core.Answer{{CallID: "c1", Output: json.RawMessage(`1`), Deny: true}}, "exactly one", 0},
		{"no outcome", []core.Answer{{CallID: "c1"}}, "exactly one", 0},
		{"error without code", []core.Answer{{CallID: "c1", Error: &tools.Error{Message: "x"}}}, "needs a code", 0},
		{"reason too long", []core.Answer{{CallID: "c3", Deny: true, Reason: long}}, "the reason is longer than 4096 bytes", 0},
		{"one missing after a typed output", []core.Answer{ask1, typed}, `call_id "c3" (tools.send, waiting for approval) has no answer`, 1},
		{"output schema", []core.Answer{ask1, {CallID: "c2", Output: json.RawMessage(`"x"`)}, send}, `answers[1] (call_id "c2", tools.typed): output does not match the output schema`, 1},
		{"output schema before an unknown id", []core.Answer{{CallID: "c2", Output: json.RawMessage(`"x"`)}, {CallID: "c9", Approve: true}}, "output does not match the output schema", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := &countingStore{Store: durable.NewMemoryStore(0)}
			e := storedExecutor(t, store, -1)
			res := pausedOnThree(t, e, 8<<10)
			_, want := parked.PrepareResume(context.Background(), Resume{Continuation: twin.Continuation, Answers: tc.answers})
			for try, reads := range []int64{tc.reads, 0} {
				before := store.gets.Load()
				_, ferr := e.PrepareResume(context.Background(), Resume{Continuation: res.Continuation, Answers: tc.answers})
				if ferr == nil || ferr.Code != fault.CodeInvalidArgument || ferr.Reason != fault.ReasonAnswersInvalid || !strings.Contains(ferr.Message, tc.want) {
					t.Fatalf("try %d: got %v, want INVALID_ARGUMENT (%s) with %q", try, ferr, fault.ReasonAnswersInvalid, tc.want)
				}
				if want == nil || ferr.Message != want.Message || ferr.Code != want.Code || ferr.Reason != want.Reason {
					t.Errorf("try %d: got %v, the state's check gives %v", try, ferr, want)
				}
				if n := store.gets.Load() - before; n != reads {
					t.Errorf("try %d: the stored state was read %d times, want %d", try, n, reads)
				}
			}
			before := store.gets.Load()
			out := resume(t, e, res, send, typed, ask1)
			if string(out.Result) != `["x",1,"sent"]` || store.gets.Load() != before+1 {
				t.Fatalf("%s %v; %d reads", out.Result, out.Error, store.gets.Load()-before)
			}
		})
	}
}

// TestLargeOutputSchemaNotRemembered: an output schema larger than
// maxRememberedOutputValues is not remembered; each refusal it decides
// reads the state.
func TestLargeOutputSchemaNotRemembered(t *testing.T) {
	enum := make([]int, maxRememberedOutputValues+1)
	for i := range enum {
		enum[i] = i
	}
	schema, _ := json.Marshal(map[string]any{"enum": enum})
	store := &countingStore{Store: durable.NewMemoryStore(0)}
	e := storedExecutor(t, store, -1)
	res := pausedOnThreeWith(t, e, 8<<10, string(schema))
	for try := range 2 {
		before := store.gets.Load()
		_, ferr := e.PrepareResume(context.Background(), Resume{Continuation: res.Continuation,
			Answers: []core.Answer{ask1, {CallID: "c2", Output: json.RawMessage(`-1`)}, send}})
		if ferr == nil || !strings.Contains(ferr.Message, "output does not match the output schema") || store.gets.Load() != before+1 {
			t.Fatalf("try %d: %v; %d reads", try, ferr, store.gets.Load()-before)
		}
	}
}

// BenchmarkResumeRefused measures a refused Resume of an execution whose
// stored state is 4 MiB, by the way its answers are wrong; reads/op
// counts the reads of the stored state (the "output schema" case must
// read it: only the state has the schema).
func BenchmarkResumeRefused(b *testing.B) {
	store := &countingStore{Store: durable.NewMemoryStore(0)}
	e := storedExecutor(b, store, -1)
	res := pausedOnThree(b, e, 4<<20)
	for _, bc := range []struct {
		name    string
		answers []core.Answer
	}{
		{"unknown", []core.Answer{{CallID: "c999", Output: json.RawMessage(`1`)}}},
		{"none", nil},
		{"badjson", []core.Answer{{CallID: "c1", Output: json.RawMessage(`{`)}}},
		{"schema", []core.Answer{ask1, {CallID: "c2", Output: json.RawMessage(`"x"`)}, send}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			before := store.gets.Load()
			b.ReportAllocs()
			for b.Loop() {
				if _, ferr := e.PrepareResume(context.Background(), Resume{Continuation: res.Continuation, Answers: bc.answers}); ferr == nil {
					b.Fatal("accepted")
				}
			}
			b.ReportMetric(float64(store.gets.Load()-before)/float64(b.N), "reads/op")
		})
	}
}
