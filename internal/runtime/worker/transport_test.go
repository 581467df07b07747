package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/ipc"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	wp "github.com/ptcrun/ptc/internal/workerproto"
	"github.com/ptcrun/ptc/tools"
)

// TestCancelBeforeExecuteRead sends an Execute and its Cancel in one
// write: whichever goroutine reads them, the Cancel must not be lost
// because the lane had not started the execution yet.
func TestCancelBeforeExecuteRead(t *testing.T) {
	p := newPool(t, Config{Workers: -1})
	for i := range 5 {
		w, err := p.acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		job, _ := newJob(t, `while (true) {}`, testLimits())
		es := newExecState(context.Background(), job, time.Second)
		if !w.register(es) {
			t.Fatal("worker gone")
		}
		if err := w.queue(es.lane, &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Execute{Execute: executeFrame(es.slot, job)}}); err != nil {
			t.Fatal(err)
		}
		if err := w.queue(cancelTag(es.lane), &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Cancel{Cancel: &wp.Cancel{Slot: es.slot}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.conn.Flush(); err != nil {
			t.Fatal(err)
		}
		out := w.serveExec(es)
		if out.Err == nil || out.Err.Kind != fault.KindCancelled {
			t.Fatalf("round %d: %v, want CANCELLED", i, out.Err)
		}
		es.finish(out)
		w.unregister(es)
		p.release(w, false)
	}
}

// fakeSupervisor is the supervisor's end of a connection to a lane in
// this process: it answers ToolStart frames (after delay, by the tool's
// name) and Discover frames.
type fakeSupervisor struct {
	conn  *ipc.Conn
	delay map[string]time.Duration
	// hold holds back a tool's answers until its channel is closed.
	hold map[string]chan struct{}
	wg   sync.WaitGroup
	// alone records the alone flag of each call.
	mu    sync.Mutex
	alone map[uint32]bool
}

func (f *fakeSupervisor) handle(tag uint64, payload []byte) error {
	var in wp.WorkerFrame
	if err := proto.Unmarshal(payload, &in); err != nil {
		return err
	}
	switch m := in.Msg.(type) {
	case *wp.WorkerFrame_ToolStart:
		ts := m.ToolStart
		f.mu.Lock()
		if f.alone == nil {
			f.alone = map[uint32]bool{}
		}
		f.alone[ts.GetCall()] = ts.GetAlone()
		f.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			time.Sleep(f.delay[ts.GetTool()])
			if c := f.hold[ts.GetTool()]; c != nil {
				<-c
			}
			_ = sendFrame(f.conn, 1, toolReply(ts.GetSlot(), ts.GetCall(), json.RawMessage(fmt.Sprintf(`{"call":%d}`, ts.GetCall())), nil), false)
		}()
	case *wp.WorkerFrame_Discover:
		d := m.Discover
		_ = sendFrame(f.conn, 1, &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_DiscoverReply{DiscoverReply: &wp.DiscoverReply{
			Slot: d.GetSlot(), Id: d.GetId(), Found: true, ResultJson: []byte(`[]`)}}}, false)
	}
	return nil
}

// proxyPair returns a call proxy for execution slot on lane 1 of a child
// whose supervisor is a fakeSupervisor in this process.
func proxyPair(t *testing.T, slot uint64, delay map[string]time.Duration) (*childExec, *fakeSupervisor) {
	t.Helper()
	var ab, ba [2]int
	if err := unix.Pipe2(ab[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if err := unix.Pipe2(ba[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	f := &fakeSupervisor{delay: delay}
	sup, err := ipc.New(ba[0], ab[1], ipc.Options{Handler: f.handle})
	if err != nil {
		t.Fatal(err)
	}
	f.conn = sup
	cc, err := ipc.New(ab[0], ba[1], ipc.Options{MaxMailboxBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := &child{conn: cc}
	l, err := c.newLane(1)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { _ = sup.Serve(); close(served) }()
	t.Cleanup(func() {
		_ = sup.Close()
		<-served
		f.wg.Wait()
		_ = cc.Close()
	})
	return newChildExec(context.Background(), slot, l, []*wp.Tool{{Name: "fast", Inline: true}, {Name: "slow"}}), f
}

// TestProxyAnswers drives the call proxy the way its two users do: the
// JavaScript engine (Begin, then Await on one goroutine) and the
// WebAssembly host (Start, and Invocations on many goroutines at once).
func TestProxyAnswers(t *testing.T) {
	t.Run("alone only when the script waits on one call", func(t *testing.T) {
		x, f := proxyPair(t, 7, nil)
		ctx := context.Background()
		await := func(n int) {
			for range n {
				if got, _, err := x.Await(ctx); got == 0 {
					t.Fatal(err)
				}
			}
		}
		x.Begin(ctx, "fast", json.RawMessage(`{}`)) // 1: awaited alone
		await(1)
		x.Begin(ctx, "fast", json.RawMessage(`{}`)) // 2, 3: together
		x.Begin(ctx, "fast", json.RawMessage(`{}`))
		await(2)
		x.Begin(ctx, "slow", json.RawMessage(`{}`)) // 4: not inline
		await(1)
		x.Begin(ctx, "slow", json.RawMessage(`{}`)) // 5, 6: another call open
		x.Begin(ctx, "fast", json.RawMessage(`{}`))
		await(2)
		x.Begin(ctx, "fast", json.RawMessage(`{}`)) // 7: sent at the end of the execution
		x.release()
		await(1) // its answer: the supervisor has read it
		want := map[uint32]bool{1: true, 2: false, 3: false, 4: false, 5: false, 6: false, 7: false}
		f.wg.Wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		if !reflect.DeepEqual(f.alone, want) {
			t.Fatalf("alone flags %v, want %v", f.alone, want)
		}
	})
	t.Run("await any, in arrival order", func(t *testing.T) {
		x, f := proxyPair(t, 7, nil)
		gate := make(chan struct{})
		var open sync.Once
		release := func() { open.Do(func() { close(gate) }) }
		t.Cleanup(release) // before the pair's cleanup waits for the answers
		f.hold = map[string]chan struct{}{"slow": gate}
		ctx := context.Background()
		slow := x.Begin(ctx, "slow", json.RawMessage(`{}`))
		fast := x.Begin(ctx, "fast", json.RawMessage(`{}`))
		for _, want := range []uint32{fast, slow} {
			got, out, err := x.Await(ctx)
			if err != nil || got != want || string(out) != fmt.Sprintf(`{"call":%d}`, want) {
				t.Fatalf("answer %d %s %v, want ticket %d", got, out, err, want)
			}
			release() // slow answers once fast's answer was taken
		}
	})
	t.Run("invocations from many goroutines", func(t *testing.T) {
		x, _ := proxyPair(t, 7, map[string]time.Duration{"slow": 20 * time.Millisecond})
		ctx := context.Background()
		const n = 16
		invs := make([]bridge.Invocation, n)
		for i := range invs {
			tool := "fast"
			if i%3 == 0 {
				tool = "slow"
			}
			invs[i] = x.Start(ctx, tool, json.RawMessage(`{}`))
		}
		var wg sync.WaitGroup
		for i, inv := range invs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := inv()
				if err != nil || string(out) != fmt.Sprintf(`{"call":%d}`, i+1) {
					t.Errorf("call %d: %s %v", i+1, out, err)
				}
			}()
		}
		wg.Wait()
	})
	t.Run("a refused call keeps the numbering", func(t *testing.T) {
		x, _ := proxyPair(t, 7, nil)
		ctx := context.Background()
		big := make(json.RawMessage, bridge.MaxArgumentBytes+1)
		refused := x.Begin(ctx, "fast", big)
		sent := x.Begin(ctx, "fast", json.RawMessage(`{}`))
		if sent != 1 {
			t.Fatalf("the call after a refused one is number %d", sent)
		}
		got := map[uint32]error{}
		for range 2 {
			ticket, _, err := x.Await(ctx)
			if ticket == 0 {
				t.Fatal(err)
			}
			got[ticket] = err
		}
		var ce *bridge.CallError
		if err := got[refused]; err == nil || !asCallError(err, &ce) || ce.Code != "invalid_arguments" {
			t.Errorf("refused call: %v", err)
		}
		if err := got[sent]; err != nil {
			t.Errorf("sent call: %v", err)
		}
	})
	t.Run("discovery while answers arrive", func(t *testing.T) {
		x, _ := proxyPair(t, 7, nil)
		ctx := context.Background()
		c := x.Begin(ctx, "fast", json.RawMessage(`{}`))
		if hits := x.Search("q", 3); hits == nil {
			t.Fatal("no answer to a search")
		}
		got, _, err := x.Await(ctx)
		if err != nil || got != c {
			t.Fatalf("the answer read during discovery: %d %v", got, err)
		}
	})
	t.Run("await ends with its context", func(t *testing.T) {
		x, _ := proxyPair(t, 7, map[string]time.Duration{"slow": time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		x.Begin(ctx, "slow", json.RawMessage(`{}`))
		if got, _, _ := x.Await(ctx); got != 0 {
			t.Fatal("Await outlived its context")
		}
	})
	t.Run("answers to an ended execution are dropped", func(t *testing.T) {
		x, _ := proxyPair(t, 7, nil)
		x.calls = 1
		x.file(&wp.SupervisorFrame{Msg: &wp.SupervisorFrame_ToolReply{ToolReply: &wp.ToolReply{Slot: 6, Call: 1}}})
		x.file(&wp.SupervisorFrame{Msg: &wp.SupervisorFrame_ToolReply{ToolReply: &wp.ToolReply{Slot: 7, Call: 2}}})
		x.file(&wp.SupervisorFrame{Msg: &wp.SupervisorFrame_DiscoverReply{DiscoverReply: &wp.DiscoverReply{Slot: 6, Id: 1}}})
		if len(x.answers) != 0 || len(x.found) != 0 {
			t.Fatalf("kept %+v %+v", x.answers, x.found)
		}
		x.file(&wp.SupervisorFrame{Msg: &wp.SupervisorFrame_ToolReply{ToolReply: &wp.ToolReply{Slot: 7, Call: 1}}})
		if len(x.answers) != 1 {
			t.Fatal("the execution's own answer was dropped")
		}
	})
}

func asCallError(err error, ce **bridge.CallError) bool {
	c, ok := err.(*bridge.CallError)
	*ce = c
	return ok
}

// TestManyCallsTogether runs 60 calls made together (to an inline tool,
// which the supervisor runs where it reads the call, and to others, some
// failing) in a worker and in-process, and compares results and traces:
// batched frames keep the calls' order and answers.
func TestManyCallsTogether(t *testing.T) {
	src := `
const calls = [];
for (let i = 0; i < 60; i++) {
	const c = i % 3 === 0 ? tools.quick({i}) : i % 3 === 1 ? tools.math.add({a: i, b: 1}) : tools.fail({});
	calls.push(c.then((r) => r.sum ?? r.i, (e) => e.code));
}
return await Promise.all(calls);`
	quick := tools.Tool{Definition: tools.Definition{Name: "quick", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }, Inline: true}
	lim := testLimits()
	lim.MaxConcurrentToolCalls = 4
	var want []string
	for i, eng := range []ptcruntime.Engine{newPool(t, Config{Mode: ModeInProcess}), newPool(t, Config{})} {
		job, d := newJob(t, src, lim, quick)
		out := eng.Run(context.Background(), job)
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		got := []string{string(out.Result)}
		for _, rec := range d.Trace() {
			got = append(got, traceLine(rec))
		}
		if i == 0 {
			want = got
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("worker\n%v\nin-process\n%v", got, want)
		}
	}
}

// TestReserveThreads checks that reserving threads leaves the process with
// at least that many: started at once, none is reused for another.
func TestReserveThreads(t *testing.T) {
	const n = 12
	reserveThreads(n)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	if got := statusCount(b, "Threads:"); got < n {
		t.Fatalf("%d threads after reserving %d", got, n)
	}
}

// statusCount reads a count field of /proc/<pid>/status.
func statusCount(b []byte, key string) int64 {
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}
