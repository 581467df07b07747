package python

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	"github.com/ptcrun/ptc/tools"
)

// maxFrameSlack is what a protocol line may take beyond the larger of the
// output limit and bridge.MaxArgumentBytes: its keys and punctuation.
const maxFrameSlack = 1 << 10

// errProtocol ends an execution whose interpreter broke the protocol.
var errProtocol = errors.New("python protocol")

// session is one execution's side of the protocol with the prelude. The
// guest's goroutine calls Read and Write (stdin and stdout); each started
// call runs on a goroutine of its own (counted by calls), which queues
// its completion for the guest to read and ends when the call does — at
// the latest when the execution's context ends. A call to an inline tool
// (tools.Tool.Inline) waits instead until the guest reads: if it is then
// the only call the guest waits for, it runs right there, on the guest's
// goroutine, its CPU time not charged to the guest (flush).
type session struct {
	// job, caller, stop and maxFrame are set by attach, before it closes
	// attached; stop ends the execution with a cause (a protocol breach).
	job      *runtime.Job
	caller   bridge.Caller
	stop     func(error)
	maxFrame int
	attached chan struct{}
	// hdr is the job's first line for the prelude, set by attach.
	hdr []byte
	// ctx ends with the execution (with the instance, for an interpreter
	// started ahead of its job); set by open with meter, the guest's CPU
	// time since its job began and its memory.
	ctx   context.Context
	meter wasm.Meter
	calls sync.WaitGroup
	// waiting, when not nil, is closed when the guest first waits for its
	// job: the interpreter has done all its job-independent work.
	waiting     chan struct{}
	waitingOnce sync.Once
	// begun (the guest's goroutine only, read after the run) is whether
	// the guest was given its job; src are its clocks and random source.
	begun bool
	src   sources
	// watch, when set (WithCPUWatch), is given the guest's meter when the
	// job begins.
	watch func(wasm.Meter)
	// aw is the caller when it answers calls itself (a worker's call
	// proxy): calls begin on the guest's goroutine and their answers are
	// awaited there, in Read, with tickets mapping them to the prelude's
	// call ids (the guest's goroutine only).
	aw      bridge.Awaiter
	tickets map[uint32]ticketed
	// deferred are the started calls to inline tools not yet run or
	// handed to a goroutine (the guest's goroutine only, then the
	// execution's end: flush, spawnDeferred).
	deferred []deferredCall

	mu       sync.Mutex
	queue    []byte
	inflight int
	// ready has a token when queue has grown since the guest last looked.
	ready chan struct{}
	// refused is the last call refused for the call budget.
	refused *bridge.CallError

	// Written by the guest's goroutine only (Write), read after the run.
	line    []byte
	result  json.RawMessage
	failure *failure
	breach  *fault.Error
}

// deferredCall is a started call to an inline tool: its invocation, the
// prelude's id for it and the tool's name.
type deferredCall struct {
	inv  bridge.Invocation
	id   int64
	name string
}

// ticketed is a call begun through an Awaiter: the prelude's id for it
// and the tool's name.
type ticketed struct {
	id   int64
	name string
}

// failure is the prelude's report of an uncaught exception.
type failure struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Stack   string `json:"stack"`
	Syntax  bool   `json:"syntax"`
	Tool    string `json:"tool"`
	Code    string `json:"code"`
	Name    string `json:"name"`
	Result  bool   `json:"result"`
}

func newSession(code []byte) *session {
	return &session{ready: make(chan struct{}, 1), attached: make(chan struct{}), queue: slices.Clone(code), src: newSources()}
}

// attach gives the session its job: the guest reads it once it has
// loaded the prelude (at once, when the job came first). stop ends the
// execution with a cause.
func (s *session) attach(job *runtime.Job, caller bridge.Caller, stop func(error)) {
	maxFrame := bridge.MaxArgumentBytes
	if m := job.Limits.MaxOutputBytes; m > int64(maxFrame) || m <= 0 {
		maxFrame = bridge.MaxResultBytes
		if m > 0 && m < int64(maxFrame) {
			maxFrame = int(m)
		}
	}
	input := json.RawMessage(bytes.TrimSpace(job.Input))
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	var seed *uint64
	if job.Deterministic {
		seed = &job.Seed
	}
	hdr, err := json.Marshal(struct {
		Src   string          `json:"src"`
		Input json.RawMessage `json:"input"`
		Names []string        `json:"names"`
		Seed  *uint64         `json:"seed"`
	}{job.Source, input, caller.Names(), seed})
	if err != nil {
		// The input was validated as JSON before the job was made.
		hdr, _ = json.Marshal(map[string]string{"src": "raise ValueError('the input is not JSON')"})
	}
	s.job, s.caller, s.stop, s.maxFrame = job, caller, stop, maxFrame+maxFrameSlack
	s.aw, _ = caller.(bridge.Awaiter)
	s.hdr = append(hdr, '\n')
	close(s.attached)
}

// open is RunStreams's (and StartStreams's) open.
func (s *session) open(ctx context.Context, m wasm.Meter) (io.Reader, io.Writer) {
	s.ctx, s.meter = ctx, m
	return reader{s}, writer{s}
}

// configure is RunStreams's configure: the clocks, sleeps and random
// source are the session's (see sources).
func (s *session) configure(c wazero.ModuleConfig) wazero.ModuleConfig { return s.src.configure(c) }

// begin is called by the guest's first read once the prelude's code is
// read, with the job attached: the job's clocks and random source replace
// the start's, and the job's line is queued.
func (s *session) begin() {
	s.begun = true
	s.src.begin(s.job, s.ctx)
	s.mu.Lock()
	s.queue = append(s.queue, s.hdr...)
	s.mu.Unlock()
	if s.watch != nil {
		s.watch(s.meter)
	}
}

// reader is the guest's stdin: the job, then completions as they come.
type reader struct{ s *session }

// Read implements io.Reader. With nothing queued it reports the guest
// idle (a resumable job) and waits for a completion or for the end of the
// execution, which it reports as the end of the stream.
func (r reader) Read(p []byte) (int, error) {
	s := r.s
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			n := copy(p, s.queue)
			s.queue = s.queue[n:]
			s.mu.Unlock()
			return n, nil
		}
		inflight := s.inflight
		s.mu.Unlock()
		if !s.begun {
			// The prelude is loaded and waits for its job.
			if s.waiting != nil {
				s.waitingOnce.Do(func() { close(s.waiting) })
			}
			select {
			case <-s.attached:
			case <-s.ctx.Done():
				return 0, io.EOF
			}
			s.begin()
			continue
		}
		if s.flush(inflight) {
			continue
		}
		if s.job.Idle != nil {
			s.job.Idle(inflight, s.meter.CPU())
		}
		if len(s.tickets) > 0 {
			// The answer comes to this goroutine: wait for it here.
			t, out, err := s.aw.Await(s.ctx)
			if t == 0 {
				return 0, io.EOF
			}
			if c, ok := s.tickets[t]; ok {
				delete(s.tickets, t)
				s.complete(c.id, out, err, c.name)
			}
			continue
		}
		select {
		case <-s.ready:
		case <-s.ctx.Done():
			return 0, io.EOF
		}
	}
}

// writer is the guest's stdout: protocol lines from the prelude.
type writer struct{ s *session }

// Write implements io.Writer.
func (w writer) Write(p []byte) (int, error) {
	s := w.s
	if !s.begun {
		// The prelude writes nothing before its job.
		return 0, errProtocol
	}
	if s.breach != nil {
		return 0, errProtocol
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(s.line)+len(p) > s.maxFrame {
				s.tooLong(p)
				return 0, errProtocol
			}
			s.line = append(s.line, p...)
			break
		}
		if len(s.line)+i > s.maxFrame {
			s.tooLong(p)
			return 0, errProtocol
		}
		s.line = append(s.line, p[:i]...)
		p = p[i+1:]
		s.frame(s.line)
		s.line = s.line[:0]
		if s.breach != nil {
			return 0, errProtocol
		}
	}
	return n, nil
}

// end stops the execution with a breach.
func (s *session) end(fe *fault.Error) {
	if s.breach == nil {
		s.breach = fe
		s.stop(errProtocol)
	}
}

// tooLong ends an execution whose line (s.line, then rest) is over the
// frame bound: a result over the output limit, or arguments over the
// bridge's bound.
func (s *session) tooLong(rest []byte) {
	head := append(s.line[:len(s.line):len(s.line)], rest[:min(len(rest), 8)]...)
	if bytes.HasPrefix(head, []byte(`{"r":`)) {
		max := s.job.Limits.MaxOutputBytes
		s.end(fault.Breach(fault.KindOutputLimit, max, int64(len(s.line)+len(rest)),
			"the script's result is more than %d bytes; return a smaller result (summarise, page, or filter)", max))
		return
	}
	s.end(fault.New(fault.KindScript, "the script sent a value of more than %d bytes (tool call arguments may have at most %d bytes)", s.maxFrame-maxFrameSlack, bridge.MaxArgumentBytes))
}

// frame handles one protocol line. The prelude writes each kind of line
// with its kind's key first.
func (s *session) frame(line []byte) {
	if len(line) < 6 || !bytes.HasPrefix(line, []byte(`{"`)) || line[3] != '"' || line[4] != ':' || line[len(line)-1] != '}' {
		s.forged()
		return
	}
	if (line[2] == 'r' || line[2] == 'e') && (s.result != nil || s.failure != nil) {
		// The prelude reports once, then ends the interpreter: a second
		// report is the script's own.
		s.forged()
		return
	}
	switch line[2] {
	case 'l':
		var f struct {
			L string `json:"l"`
			M string `json:"m"`
		}
		if json.Unmarshal(line, &f) != nil {
			s.forged()
			return
		}
		switch f.L {
		case "log", "info", "warn", "error", "debug":
		default:
			f.L = "log"
		}
		s.job.Logs.Write(f.L, f.M)
	case 'c':
		var f struct {
			C int64           `json:"c"`
			N string          `json:"n"`
			A json.RawMessage `json:"a"`
		}
		if json.Unmarshal(line, &f) != nil {
			s.forged()
			return
		}
		s.startCall(f.C, f.N, integralFloats(f.A))
	case 's':
		var f struct {
			S int64  `json:"s"`
			Q string `json:"q"`
			K int    `json:"k"`
		}
		if json.Unmarshal(line, &f) != nil {
			s.forged()
			return
		}
		hits := s.caller.Search(f.Q, max(f.K, 1))
		if hits == nil {
			hits = []bridge.SearchHit{}
		}
		b, _ := json.Marshal(hits)
		s.started()
		s.complete(f.S, b, nil, "")
	case 'd':
		var f struct {
			D int64  `json:"d"`
			N string `json:"n"`
		}
		if json.Unmarshal(line, &f) != nil {
			s.forged()
			return
		}
		s.started()
		d, ok := s.caller.Describe(f.N)
		if !ok {
			s.complete(f.D, nil, &bridge.CallError{Name: bridge.NameToolError, Tool: f.N, Code: tools.CodeUnknownTool,
				Message: fmt.Sprintf("unknown tool %q; use tools.search(query) to find tools", f.N)}, f.N)
			return
		}
		b, _ := json.Marshal(d)
		s.complete(f.D, b, nil, f.N)
	case 'r':
		raw := bytes.TrimSpace(line[5 : len(line)-1])
		if !json.Valid(raw) {
			s.forged()
			return
		}
		s.result = append(json.RawMessage(nil), integralFloats(raw)...)
	case 'e':
		var f struct {
			E failure `json:"e"`
		}
		if json.Unmarshal(line, &f) != nil {
			s.forged()
			return
		}
		s.failure = &f.E
	default:
		s.forged()
	}
}

// forged ends an execution whose fd 1 carried something the prelude does
// not write: the script wrote to the protocol stream itself.
func (s *session) forged() {
	s.end(fault.New(fault.KindScript, "the script wrote to the interpreter's file descriptor 1 directly, which carries ptc's protocol; use print() or logging for logs and return the result"))
}

// startCall starts a tool call; its completion is queued when it ends
// (by Read, for a caller that is an Awaiter).
func (s *session) startCall(id int64, name string, args json.RawMessage) {
	s.started()
	if s.aw != nil {
		if s.tickets == nil {
			s.tickets = map[uint32]ticketed{}
		}
		s.tickets[s.aw.Begin(s.ctx, name, args)] = ticketed{id, name}
		return
	}
	inv := s.caller.Start(s.ctx, name, args)
	if s.caller.Inline(name) {
		s.deferred = append(s.deferred, deferredCall{inv, id, name})
		return
	}
	s.spawn(deferredCall{inv, id, name})
}

// spawn runs a started call on a goroutine of its own, which queues its
// completion.
func (s *session) spawn(c deferredCall) {
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		out, err := c.inv()
		s.complete(c.id, out, err, c.name)
	}()
}

// flush is called by the guest's goroutine when the guest waits for a
// completion with none queued, inflight calls in flight. A single deferred
// call that nothing else runs beside runs here, outside the guest's CPU
// time, and flush reports true: its completion is queued. Otherwise every
// deferred call gets its goroutine, so that calls made together run
// concurrently.
func (s *session) flush(inflight int) bool {
	if len(s.deferred) == 1 && inflight == 1 {
		c := s.deferred[0]
		s.deferred = s.deferred[:0]
		var out json.RawMessage
		var err error
		run := func() { out, err = c.inv() }
		if s.meter.Exclude != nil {
			s.meter.Exclude(run)
		} else {
			run()
		}
		s.complete(c.id, out, err, c.name)
		return true
	}
	s.spawnDeferred()
	return false
}

// spawnDeferred hands every deferred call to a goroutine of its own. At
// the end of an execution (once the guest has ended), the calls the
// script started but never waited for run so, with the execution's
// context ended, as in JavaScript.
func (s *session) spawnDeferred() {
	for _, c := range s.deferred {
		s.spawn(c)
	}
	s.deferred = s.deferred[:0]
}

// started counts a call the guest will wait for.
func (s *session) started() {
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
}

// complete queues the completion of call id for the guest, as a frame
// of marshal data (see marshal.go).
func (s *session) complete(id int64, out json.RawMessage, err error, name string) {
	var frame []byte
	if err == nil {
		if len(bytes.TrimSpace(out)) == 0 {
			out = json.RawMessage("null")
		}
		var ok bool
		if frame, ok = appendResultFrame(make([]byte, 0, 64+len(out)), id, out); !ok {
			err = &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: tools.CodeInvalidOutput, Message: "the tool returned invalid JSON"}
		}
	}
	if err != nil {
		var ce *bridge.CallError
		if !errors.As(err, &ce) {
			ce = &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: tools.CodeToolFailed, Message: err.Error()}
		}
		x, _ := json.Marshal(struct {
			Name    string            `json:"name"`
			Tool    string            `json:"tool"`
			Code    string            `json:"code"`
			Message string            `json:"message"`
			Errors  []tools.Violation `json:"errors,omitempty"`
		}{ce.Name, ce.Tool, ce.Code, ce.Message, ce.Errors})
		frame = appendErrorFrame(nil, id, x)
		if ce.Limit > 0 {
			s.mu.Lock()
			s.refused = ce
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	s.queue = append(s.queue, frame...)
	s.inflight--
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// finish fills out from what the prelude reported, after the run.
func (s *session) finish(out *runtime.Outcome) {
	if s.breach != nil {
		out.Err = s.breach
		return
	}
	if out.Err != nil {
		if s.failure == nil && s.result == nil && out.Err.Kind == fault.KindScript && strings.HasPrefix(out.Err.Message, "the module exited with code") {
			// The prelude could not report: the script closed or broke
			// the interpreter's standard streams, or the interpreter
			// failed. Say so in the script's terms.
			out.Err.Message = "the script ended the interpreter before it returned (it closed the interpreter's standard streams, or a fatal error): " + out.Err.Message
		}
		return
	}
	switch {
	case s.failure != nil:
		out.Err = s.fault(s.failure, out)
	case s.result != nil:
		if max := s.job.Limits.MaxOutputBytes; max > 0 && int64(len(s.result)) > max {
			out.Err = fault.Breach(fault.KindOutputLimit, max, int64(len(s.result)),
				"the result is %d bytes, more than the limit of %d bytes; return a smaller result", len(s.result), max)
			return
		}
		out.Result = s.result
	default:
		out.Err = fault.New(fault.KindScript, "the script ended the interpreter before it returned (os._exit or a fatal error)")
	}
}

// fault converts the prelude's report of an uncaught exception.
func (s *session) fault(f *failure, out *runtime.Outcome) *fault.Error {
	switch {
	case f.Syntax:
		return &fault.Error{Kind: fault.KindSyntax, Message: f.Message, Line: f.Line, Column: f.Col}
	case f.Type == "MemoryError":
		lim := s.job.Limits.MemoryBytes
		fe := fault.Breach(fault.KindMemoryLimit, lim, max(out.PeakMemoryBytes, lim),
			"the script ran out of memory (limit %d bytes); use less memory or raise memory_bytes", lim)
		fe.Line, fe.Column, fe.Stack = f.Line, f.Col, f.Stack
		return fe
	case f.Name == bridge.NameCallLimitError && f.Code == tools.CodeCallLimit:
		s.mu.Lock()
		ce := s.refused
		s.mu.Unlock()
		var lim, obs int64
		if ce != nil {
			lim, obs = ce.Limit, ce.Observed
		}
		fe := fault.Breach(fault.KindToolCallLimit, lim, obs, "%s", f.Message)
		fe.Line, fe.Column, fe.Stack, fe.Tool = f.Line, f.Col, f.Stack, f.Tool
		return fe
	}
	return &fault.Error{Kind: fault.KindScript, Message: f.Message, Line: f.Line, Column: f.Col, Stack: f.Stack, Tool: f.Tool}
}
