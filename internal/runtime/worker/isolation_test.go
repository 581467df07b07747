package worker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/ipc"
	"github.com/ptcrun/ptc/internal/limits"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// TestOSMemoryLimit makes one native call (JSON.parse) allocate past the
// worker's RLIMIT_DATA: the watchdog cannot interrupt it, the Go runtime
// in the worker runs out of memory and dies, and the death is classified
// as MEMORY_LIMIT.
func TestOSMemoryLimit(t *testing.T) {
	if raceEnabled {
		t.Skip("RLIMIT_DATA is not tightened per execution under the race detector")
	}
	p := newPool(t, Config{Workers: 1})
	l := testLimits()
	l.MemoryBytes = 64 << 20
	l.Timeout = 60 * time.Second
	job, _ := newJob(t, `const s = "[" + "[],".repeat(3e6) + "[]]"; return JSON.parse(s).length`, l)
	out := p.Run(context.Background(), job)
	if out.Err == nil || out.Err.Kind != fault.KindMemoryLimit {
		t.Fatalf("error %v (%v), want MEMORY_LIMIT", out.Err, out.Err.Cause)
	}
	if out.Err.Limit != l.MemoryBytes {
		t.Errorf("Limit %d, want %d", out.Err.Limit, l.MemoryBytes)
	}
	t.Logf("%v (observed %d MiB)", out.Err, out.Err.Observed>>20)
	next, _ := newJob(t, `return 6`, testLimits())
	if out := p.Run(context.Background(), next); out.Err != nil {
		t.Fatal(out.Err)
	}
}

func TestFacts(t *testing.T) {
	f, err := Check(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", f)
	if f.Mode != ModeWorker || f.ExecutionsPerWorker != 1 || f.RlimitDataBytes <= 0 || f.RlimitSlackBytes <= 0 ||
		f.WatchdogBusy <= 0 || f.WatchdogIdle < f.WatchdogBusy || f.EnvironmentSize != 0 || f.Pid <= 0 ||
		f.ProcessGroup != f.Pid || !f.NoNewPrivs || f.SupervisorNetNamespace == "" {
		t.Errorf("facts %+v", f)
	}
	if os.Geteuid() == 0 && f.NetNamespace == f.SupervisorNetNamespace {
		t.Logf("private network not in force as root: %s", f.NetNamespaceError)
	}
	off, err := Check(Config{NoNetworkNamespace: true})
	if err != nil {
		t.Fatal(err)
	}
	if !off.NetNamespaceDisabled || off.NetNamespace != off.SupervisorNetNamespace {
		t.Errorf("facts with NoNetworkNamespace: %+v", off)
	}
	in, err := Check(Config{Mode: ModeInProcess})
	if err != nil || in.Mode != ModeInProcess {
		t.Errorf("in-process facts %+v %v", in, err)
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := NewPool(Config{Mode: Mode(7)}); err == nil {
		t.Error("unknown mode accepted")
	}
	_, err := NewPool(Config{Executable: "/bin/true"})
	if err == nil || !strings.Contains(err.Error(), "handshake") {
		t.Errorf("a binary that is not a worker: %v", err)
	}
	_, err = NewPool(Config{Executable: "/nonexistent/ptcd"})
	if err == nil {
		t.Error("missing executable accepted")
	}
}

// TestFrameBounds checks that a frame from a worker larger than
// MaxFrameBytes stops the worker before the supervisor holds it: the
// execution whose result it carried fails as INTERNAL.
func TestFrameBounds(t *testing.T) {
	p := newPool(t, Config{Workers: -1, MaxFrameBytes: 1 << 10})
	job, _ := newJob(t, `return "x".repeat(4096)`, testLimits())
	out := p.Run(context.Background(), job)
	if out.Err == nil || out.Err.Kind != fault.KindInternal {
		t.Fatalf("oversized Done frame: %v", out.Err)
	}
	var big *ipc.FrameTooLargeError
	if !errors.As(out.Err.Cause, &big) || big.Max != 1<<10 {
		t.Errorf("cause %v, want the frame bound", out.Err.Cause)
	}
	// Smaller frames still pass on a new worker.
	job, _ = newJob(t, `return "x".repeat(100)`, testLimits())
	if out := p.Run(context.Background(), job); out.Err != nil {
		t.Fatal(out.Err)
	}
}

// discardConn returns a connection whose frames go nowhere and from which
// nothing arrives, for supervisor-side checks without a worker.
func discardConn(t testing.TB) *ipc.Conn {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ipc.New(fds[0], null, ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		_ = unix.Close(fds[1])
	})
	return c
}

// TestWorkerFramesChecked feeds a supervisor-side worker connection frames
// a compromised worker could send.
func TestWorkerFramesChecked(t *testing.T) {
	newProc := func() (*proc, *execState) {
		l := limits.Defaults()
		l.MaxOutputBytes = 10
		job := &ptcruntime.Job{Limits: l, Tools: nil}
		es := newExecState(context.Background(), job, time.Second)
		w := &proc{pool: &Pool{cfg: Config{ExecutionsPerWorker: 1}}, execs: map[uint64]*execState{1: es}, conn: discardConn(t)}
		es.slot, es.lane = 1, 1
		return w, es
	}
	handle := func(w *proc, f *wp.WorkerFrame) error {
		tag, _ := frameSlot(f)
		return w.handle(tag, f)
	}
	cases := []struct {
		name    string
		frame   *wp.WorkerFrame
		wantErr string
		want    func(*testing.T, *ptcruntime.Outcome)
	}{
		{name: "tool call out of order", wantErr: "out of order",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_ToolStart{ToolStart: &wp.ToolStart{Slot: 1, Call: 7, Tool: "x"}}}},
		{name: "done for unknown slot", wantErr: "unknown execution",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_Done{Done: &wp.Done{Slot: 9}}}},
		{name: "log of an ended execution", wantErr: "",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_Log{Log: &wp.Log{Slot: 9}}},
			want:  func(*testing.T, *ptcruntime.Outcome) {}},
		{name: "ready after start", wantErr: "unexpected frame",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_Ready{Ready: &wp.Ready{}}}},
		{name: "empty frame", wantErr: "unexpected frame", frame: &wp.WorkerFrame{}},
		{name: "breach that is not a limit", wantErr: "without a limit breach",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_Breach{Breach: &wp.Breach{Slot: 1,
				Error: &wp.ExecutionError{Kind: wp.ErrorKind_ERROR_KIND_SCRIPT_ERROR}}}}},
		{name: "breach without error", wantErr: "without a limit breach",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_Breach{Breach: &wp.Breach{Slot: 1}}}},
		{name: "invalid result JSON",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_Done{Done: &wp.Done{Slot: 1, ResultJson: []byte("{"), Clean: true}}},
			want: func(t *testing.T, o *ptcruntime.Outcome) {
				if o.Err == nil || o.Err.Kind != fault.KindInternal {
					t.Errorf("got %v", o.Err)
				}
			}},
		{name: "result over the output limit",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_Done{Done: &wp.Done{Slot: 1, ResultJson: []byte(`"0123456789"`)}}},
			want: func(t *testing.T, o *ptcruntime.Outcome) {
				if o.Err == nil || o.Err.Kind != fault.KindInternal {
					t.Errorf("got %v", o.Err)
				}
			}},
		{name: "unknown error kind",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_Done{Done: &wp.Done{Slot: 1, Error: &wp.ExecutionError{Kind: 99}}}},
			want: func(t *testing.T, o *ptcruntime.Outcome) {
				if o.Err == nil || o.Err.Kind != fault.KindInternal {
					t.Errorf("got %v", o.Err)
				}
			}},
		{name: "negative numbers",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_Done{Done: &wp.Done{Slot: 1, PeakMemoryBytes: -5,
				Error: &wp.ExecutionError{Kind: wp.ErrorKind_ERROR_KIND_SCRIPT_ERROR, Line: -3, Column: -1}}}},
			want: func(t *testing.T, o *ptcruntime.Outcome) {
				if o.PeakMemoryBytes != 0 || o.Err.Line != 0 || o.Err.Column != 0 {
					t.Errorf("got %+v %+v", o, o.Err)
				}
			}},
		{name: "valid result",
			frame: &wp.WorkerFrame{Msg: &wp.WorkerFrame_Done{Done: &wp.Done{Slot: 1, ResultJson: []byte(`[1]`), Clean: true}}},
			want: func(t *testing.T, o *ptcruntime.Outcome) {
				if o.Err != nil || string(o.Result) != "[1]" {
					t.Errorf("got %s %v", o.Result, o.Err)
				}
			}},
	}
	t.Run("log level outside the set", func(t *testing.T) {
		w, es := newProc()
		es.job.Logs = ptcruntime.NewLogBuffer(time.Now(), limits.Limits{MaxLogBytes: 100}, nil)
		if err := handle(w, &wp.WorkerFrame{Msg: &wp.WorkerFrame_Log{Log: &wp.Log{Slot: 1,
			Level: "\x00evil", Message: "m"}}}); err != nil {
			t.Fatal(err)
		}
		if e, _ := es.job.Logs.Entries(); len(e) != 1 || e[0].Level != "log" {
			t.Errorf("entries %+v", e)
		}
	})
	t.Run("log flood", func(t *testing.T) {
		// Whatever a worker sends, the supervisor keeps at most the
		// execution's log cap.
		w, es := newProc()
		lim := limits.Limits{MaxLogBytes: 1 << 10}
		es.job.Logs = ptcruntime.NewLogBuffer(time.Now(), lim, nil)
		for i := 0; i < 100000; i++ {
			if err := handle(w, &wp.WorkerFrame{Msg: &wp.WorkerFrame_Log{Log: &wp.Log{Slot: 1}}}); err != nil {
				t.Fatal(err)
			}
		}
		if e, tr := es.job.Logs.Entries(); len(e) > int(lim.MaxLogBytes/limits.LogEntryOverhead) || !tr {
			t.Errorf("%d entries kept, truncated %v", len(e), tr)
		}
	})
	t.Run("breach recorded", func(t *testing.T) {
		w, es := newProc()
		if err := handle(w, &wp.WorkerFrame{Msg: &wp.WorkerFrame_Breach{Breach: &wp.Breach{Slot: 1, PeakMemoryBytes: 9,
			Error: &wp.ExecutionError{Kind: wp.ErrorKind_ERROR_KIND_MEMORY_LIMIT, Limit: 5, Observed: 7}}}}); err != nil {
			t.Fatal(err)
		}
		if es.breach == nil || es.breach.Kind != fault.KindMemoryLimit || es.breachPeak != 9 {
			t.Errorf("breach %+v peak %d", es.breach, es.breachPeak)
		}
		// The worker would be killed if the execution did not stop.
		if es.breachTimer == nil || !es.breachTimer.Stop() {
			t.Error("no kill armed after the breach")
		}
	})
	t.Run("frame sent for another execution", func(t *testing.T) {
		// A worker may not make one execution's goroutine handle
		// another's frames.
		w, _ := newProc()
		err := w.handle(2, &wp.WorkerFrame{Msg: &wp.WorkerFrame_Log{Log: &wp.Log{Slot: 1}}})
		if err == nil || !strings.Contains(err.Error(), "sent as 2") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("stray frame that cannot be decoded", func(t *testing.T) {
		w, _ := newProc()
		if err := w.stray(1, []byte{0xff, 0xff}); err == nil {
			t.Fatal("garbage accepted")
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, es := newProc()
			err := handle(w, c.frame)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tag, _ := frameSlot(c.frame); tag != es.slot {
				return
			}
			c.want(t, <-es.done)
		})
	}
}

func TestDeathOf(t *testing.T) {
	cases := []struct {
		name     string
		stderr   string
		cause    deathCause
		observed int64
	}{
		{"go runtime with sizes", "runtime: out of memory: cannot allocate 134217728-byte block (402653184 in use)\nfatal error: out of memory\n", causeMemory, 536870912},
		{"go runtime without sizes", "fatal error: runtime: out of memory\n", causeMemory, 0},
		{"mmap refused", "fatal error: runtime: cannot allocate memory\n\nruntime stack:\n", causeMemory, 0},
		{"thread refused (cgo)", "runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\nPC=0x7fe07c0b3eec m=3 sigcode=18446744073709551610\n", causeMemory, 0},
		{"thread refused", "runtime: failed to create new OS thread (have 9 already; errno=11)\nruntime: may need to increase max user processes (ulimit -u)\nfatal error: newosproc\n", causeMemory, 0},
		{"stack overflow", "runtime: goroutine stack exceeds 1000000000-byte limit\nruntime: sp=0xc0200e0390 stack=[0xc0200e0000, 0xc0400e0000]\nfatal error: stack overflow\n", causeStack, 0},
		{"panic", "panic: boom\n", causeUnknown, 0},
		{"signal dump", "SIGQUIT: quit\nPC=0x46f2a1 m=0 sigcode=0\n\ngoroutine 0 gp=0x9a0c40 m=0 mp=0x9a1b60 [idle]:\n", causeUnknown, 0},
		{"empty", "", causeUnknown, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cause, obs := deathOf(c.stderr)
			if cause != c.cause || obs != c.observed {
				t.Errorf("got %v %d, want %v %d", cause, obs, c.cause, c.observed)
			}
		})
	}
}

// TestSupervisorRSS runs 10,000 sequential executions and checks that the
// supervisor's resident memory does not grow.
func TestSupervisorRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 executions; skipped with -short")
	}
	if raceEnabled {
		t.Skip("the race detector's own memory growth hides the supervisor's")
	}
	p := newPool(t, Config{Workers: 2})
	compiled := testTools(t)
	l := testLimits()
	run := func(n int) {
		for i := 0; i < n; i++ {
			job := &ptcruntime.Job{ExecutionID: "rss", Source: `const r = await tools.echo({i: input.n}); console.log("x"); return r.i`,
				Input: json.RawMessage(`{"n":3}`), Limits: l, Logs: ptcruntime.NewLogBuffer(time.Now(), l, nil),
				Tools: bridge.New(bridge.Config{ExecutionID: "rss", Tools: compiled, MaxCalls: 10, MaxConcurrent: 4})}
			if out := p.Run(context.Background(), job); out.Err != nil {
				t.Fatal(out.Err)
			}
		}
	}
	run(1000)
	runtime.GC()
	before := procRSS(os.Getpid())
	start := time.Now()
	run(10000)
	runtime.GC()
	after := procRSS(os.Getpid())
	t.Logf("supervisor RSS %d KiB before, %d KiB after 10,000 executions (%+d KiB) in %s; %+v",
		before>>10, after>>10, (after-before)>>10, time.Since(start), p.Stats())
	if after-before > 16<<20 {
		t.Errorf("supervisor RSS grew by %d KiB over 10,000 executions", (after-before)>>10)
	}
}

// FuzzWorkerFrame feeds arbitrary frames — a tag byte, a length byte and
// that many bytes of payload, repeated — to the supervisor's handling of
// what a worker sends.
func FuzzWorkerFrame(f *testing.F) {
	seed := func(ms ...*wp.WorkerFrame) {
		var b []byte
		for _, m := range ms {
			p, _ := proto.Marshal(m)
			if len(p) > 255 {
				continue
			}
			b = append(b, 1, byte(len(p)))
			b = append(b, p...)
		}
		f.Add(b)
	}
	seed(&wp.WorkerFrame{Msg: &wp.WorkerFrame_Done{Done: &wp.Done{Slot: 1, ResultJson: []byte(`{"a":1}`)}}})
	seed(&wp.WorkerFrame{Msg: &wp.WorkerFrame_ToolStart{ToolStart: &wp.ToolStart{Slot: 1, Call: 1, Tool: "echo", ArgumentsJson: []byte(`{}`)}}})
	seed(&wp.WorkerFrame{Msg: &wp.WorkerFrame_Log{Log: &wp.Log{Slot: 1, Level: "warn", Message: "m"}}},
		&wp.WorkerFrame{Msg: &wp.WorkerFrame_Discover{Discover: &wp.Discover{Slot: 1, Id: 1, Request: &wp.Discover_Search{Search: &wp.Search{Query: "echo"}}}}})
	f.Add([]byte{0, 5, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		job := &ptcruntime.Job{Limits: limits.Defaults(), Logs: ptcruntime.NewLogBuffer(time.Now(), limits.Limits{MaxLogBytes: 1024}, nil),
			Tools: bridge.New(bridge.Config{})}
		es := newExecState(context.Background(), job, time.Second)
		defer es.tctx.end(context.Canceled)
		es.slot, es.lane = 1, 1
		w := &proc{execs: map[uint64]*execState{1: es}, conn: discardConn(t)}
		for i := 0; i < 16 && len(b) >= 2; i++ {
			tag, n := uint64(b[0]), int(b[1])
			b = b[2:]
			if n > len(b) {
				n = len(b)
			}
			payload := b[:n]
			b = b[n:]
			if err := w.stray(tag, payload); err != nil {
				return
			}
			select {
			case o := <-es.done:
				if o.Err == nil && !json.Valid(o.Result) {
					t.Fatalf("invalid result accepted: %q", o.Result)
				}
				return
			default:
			}
		}
		es.wg.Wait()
	})
}

// FuzzJobOf checks that the limits and determinism of an Execute frame are
// either valid or refused.
func FuzzJobOf(f *testing.F) {
	f.Add(int64(1), int64(2), int64(3), int64(4), int64(5), int32(1), int64(0), int32(0))
	f.Add(int64(-1), int64(-2), int64(-3), int64(-4), int64(0), int32(3), int64(-1<<62), int32(-7))
	f.Fuzz(func(t *testing.T, timeout, cpu, mem, calls, logs int64, lang int32, clockS int64, clockN int32) {
		vs := limits.Limits{}.Values()
		for i, v := range []int64{timeout, cpu, mem, calls, logs} {
			vs[i] = v
		}
		m := &wp.Execute{Language: wp.Language(lang), Source: "return 1", Limits: vs,
			Determinism: &wp.Determinism{ClockStartSeconds: clockS, ClockStartNanos: clockN}}
		job, err := jobOf(m)
		if err != nil {
			return
		}
		if job.Limits.Check() != nil {
			t.Fatalf("negative limits accepted: %+v", job.Limits)
		}
		if job.Language != core.LanguageJavaScript && job.Language != core.LanguageTypeScript {
			t.Fatalf("language %v accepted", job.Language)
		}
		if !job.Deterministic {
			t.Fatal("determinism lost")
		}
	})
}

// TestWorkerRefusesBadExecute sends a worker executions it must refuse:
// frames it cannot run (on its idle lane 2), an Execute for a lane it does
// not have, and one for its busy lane 1.
func TestWorkerRefusesBadExecute(t *testing.T) {
	p := newPool(t, Config{Workers: -1, ExecutionsPerWorker: 2})
	w, err := p.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer p.release(w, false)
	cases := []struct {
		name string
		edit func(*wp.Execute)
		lane uint64
		want string
	}{
		{name: "negative limits", lane: 2, edit: func(e *wp.Execute) { e.Limits[2] = -1 }, want: "memory_bytes is out of range"},
		{name: "limits of another table", lane: 2, edit: func(e *wp.Execute) { e.Limits = append(e.Limits, 1) }, want: "limits, want"},
		{name: "WebAssembly", lane: 2, edit: func(e *wp.Execute) { e.Language = wp.Language_LANGUAGE_WASM }, want: "needs its module's SHA-256"},
		{name: "worker is full", lane: 99, want: "worker is full"},
		{name: "slot already in use", lane: 1, want: "slot already in use"},
	}
	// Occupy lane 1 with an execution parked on a tool call.
	entered := make(chan struct{}, 1)
	parked, _ := newJob(t, `await tools.block({})`, testLimits(), blockingTool(entered))
	es1 := newExecState(context.Background(), parked, time.Second)
	if !w.register(es1) || es1.lane != 1 {
		t.Fatal("worker gone")
	}
	if err := w.send(es1.lane, &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Execute{Execute: executeFrame(es1.slot, parked)}}); err != nil {
		t.Fatal(err)
	}
	parkedOut := make(chan *ptcruntime.Outcome, 1)
	go func() { parkedOut <- w.serveExec(es1) }()
	<-entered
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job, _ := newJob(t, `return 1`, testLimits())
			es := newExecState(context.Background(), job, time.Second)
			if !w.register(es) || es.lane != 2 {
				t.Fatal("lane 2 not free")
			}
			defer w.unregister(es)
			m := executeFrame(es.slot, job)
			if c.edit != nil {
				c.edit(m)
			}
			if err := w.send(c.lane, &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Execute{Execute: m}}); err != nil {
				t.Fatal(err)
			}
			out := w.serveExec(es)
			if out.Err == nil || out.Err.Kind != fault.KindInternal || !strings.Contains(out.Err.Message, c.want) {
				t.Fatalf("got %v, want INTERNAL with %q", out.Err, c.want)
			}
		})
	}
	// The parked execution is unharmed.
	if err := w.send(cancelTag(es1.lane), &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Cancel{Cancel: &wp.Cancel{Slot: es1.slot}}}); err != nil {
		t.Fatal(err)
	}
	es1.tctx.end(context.Canceled)
	if out := <-parkedOut; out.Err == nil || out.Err.Kind != fault.KindCancelled {
		t.Errorf("parked execution: %v", out.Err)
	}
	es1.finish(&ptcruntime.Outcome{})
	w.unregister(es1)
}

// TestDeathErrorNamesTheLanguage: a worker that died of memory reports
// MEMORY_LIMIT with a message for the language that ran: a WASM guest's
// linear memory is bounded by the engine, so the message speaks of the
// rest of the process's memory, not of the script's data.
func TestDeathErrorNamesTheLanguage(t *testing.T) {
	for _, c := range []struct {
		wasm bool
		want string
	}{
		{false, "the script exhausted its memory (limit 64 MiB)"},
		{true, "the module's worker process ran out of memory outside the module's linear memory"},
	} {
		w := &proc{stderr: &head{max: stderrHead}}
		_, _ = w.stderr.Write([]byte("fatal error: runtime: out of memory\n"))
		es := &execState{job: &ptcruntime.Job{Limits: limits.Limits{MemoryBytes: 64 << 20}}, wasm: c.wasm}
		fe := w.deathError(es, nil, errors.New("exit status 2"))
		if fe.Kind != fault.KindMemoryLimit || !strings.HasPrefix(fe.Message, c.want) {
			t.Errorf("wasm %v: %v", c.wasm, fe)
		}
	}
}

// TestGoStackOverflow runs scripts that make goja recurse in Go with no
// script frame between the levels: the worker's Go stack overflows (at
// maxGoStack under the default memory limit), the process dies, and the
// death is the script's error, SCRIPT_ERROR; the pool runs the next
// execution. (Under a memory limit the stack outgrows first, the same
// scripts can end MEMORY_LIMIT: a stack is memory.) A prototype chain
// deeper than maxGoStack allows runs when the memory limit makes room
// for its stack.
func TestGoStackOverflow(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	for _, tc := range []struct{ name, src string }{
		{"toPrimitive is the object", `const o = {}; o[Symbol.toPrimitive] = o; return String(o)`},
		{"toPrimitive cycle of two", `const a = {}, b = {}; a[Symbol.toPrimitive] = b; b[Symbol.toPrimitive] = a; return a + 1`},
		{"iterator is the object", `const o = {}; o[Symbol.toPrimitive] = o; o[Symbol.iterator] = o; return [...o]`},
		{"proxy trap is the proxy", `const h = {}; const p = new Proxy(h, h); h.get = p; return p.x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLimits()
			l.Timeout = time.Minute
			l.CPUTime = time.Minute
			l.MemoryBytes = limits.Defaults().MemoryBytes
			job, _ := newJob(t, tc.src, l)
			out := p.Run(context.Background(), job)
			if out.Err == nil || out.Err.Kind != fault.KindScript || !strings.Contains(out.Err.Message, "deeper than the engine's stack") {
				t.Fatalf("error %v, want SCRIPT_ERROR for a stack overflow", out.Err)
			}
			next, _ := newJob(t, `return 6`, testLimits())
			if out := p.Run(context.Background(), next); out.Err != nil {
				t.Fatal(out.Err)
			}
		})
	}
	t.Run("deep prototype chain", func(t *testing.T) {
		if raceEnabled {
			t.Skip("a chain of millions of objects is slow under the race detector")
		}
		l := testLimits()
		l.Timeout, l.CPUTime = 2*time.Minute, 2*time.Minute
		l.MemoryBytes = 2 << 30
		job, _ := newJob(t, `let o = {x: 1}; for (let i = 0; i < 5e6; i++) o = Object.create(o); return "x" in o`, l)
		if out := p.Run(context.Background(), job); out.Err != nil || string(out.Result) != "true" {
			t.Fatalf("result %s, error %v; want true", out.Result, out.Err)
		}
	})
}
