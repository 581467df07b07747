package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/ptcrun/ptc/internal/abi"
	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/tools"
)

// trap is the panic value of a host function that stops the guest because
// it broke the ABI (bad pointer, unknown handle, ...). wazero turns the
// panic into the error returned by the module's _start.
type trap struct{ msg string }

func (t *trap) Error() string { return "ptc_v1: " + t.msg }

func trapf(format string, args ...any) {
	panic(&trap{msg: fmt.Sprintf(format, args...)})
}

// stateKey carries the *execState of an execution on the context that
// wazero hands to host functions.
type stateKey struct{}

// execState is the host side of one execution: its tools, its result
// handles, and what the classification needs to know afterwards.
type execState struct {
	tools         bridge.Caller
	maxConcurrent int
	hasMemory     bool
	// idle is the job's idleness report (resumable executions only);
	// cpu returns the CPU time the guest used so far.
	idle func(inflight int, cpu time.Duration)
	cpu  func() time.Duration

	mu        sync.Mutex
	handles   map[uint32][]byte
	next      uint32
	callLimit *bridge.CallError // the first call refused for the call budget
}

func newExecState(tools bridge.Caller, maxConcurrent int, hasMemory bool) *execState {
	if maxConcurrent < 1 {
		maxConcurrent = 1
	}
	return &execState{tools: tools, maxConcurrent: maxConcurrent, hasMemory: hasMemory, handles: map[uint32][]byte{}}
}

func stateOf(ctx context.Context) *execState {
	st, _ := ctx.Value(stateKey{}).(*execState)
	if st == nil {
		trapf("host function called outside a ptc execution")
	}
	return st
}

// checkRunning stops a guest that calls a tool after its execution ended
// (cancelled, or out of time): the call is not made, nor counted, and the
// execution ends with the reason it ended (see classify).
func checkRunning(ctx context.Context) {
	if ctx.Err() != nil {
		trapf("the execution has ended (%v); no more tool calls", context.Cause(ctx))
	}
}

// limitError returns the first call refused for the call budget, or nil.
func (s *execState) limitError() *bridge.CallError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callLimit
}

// checkPending traps when the guest holds as many unread results as the
// ABI allows, before any tool runs for the call.
func (s *execState) checkPending() {
	s.mu.Lock()
	n := len(s.handles)
	s.mu.Unlock()
	if n >= abi.MaxPendingResults {
		trapf("%d results are unread; read or drop each result handle before the next call", n)
	}
}

// put stores a payload and returns its handle. checkPending must have
// passed in the same host call (the guest is blocked meanwhile).
func (s *execState) put(payload []byte) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		s.next++
		if s.next == 0 {
			s.next = 1
		}
		if _, used := s.handles[s.next]; !used {
			break
		}
	}
	s.handles[s.next] = payload
	return s.next
}

func (s *execState) take(h uint32) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.handles[h]
	return p, ok
}

func (s *execState) drop(h uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.handles[h]
	delete(s.handles, h)
	return ok
}

// call runs one tool call through the bridge and returns the status and
// payload the guest receives.
func (s *execState) call(ctx context.Context, name string, args json.RawMessage) (int32, []byte) {
	if s.idle != nil {
		r := s.gather([]bridge.Invocation{s.tools.Start(ctx, name, args)})
		return s.outcome(name, r[0].out, r[0].err)
	}
	out, err := s.tools.Call(ctx, name, args)
	return s.outcome(name, out, err)
}

// gathered is the outcome of one invocation.
type gathered struct {
	out json.RawMessage
	err error
}

// gather runs the invocations of a resumable execution, each on its own
// goroutine (which ends when its invocation returns: the bridge ends it
// when the execution's context does), and reports idleness before
// waiting for each: the guest is blocked in this host call with the
// invocations not yet returned in flight. The bridge bounds how many
// handlers run at once.
func (s *execState) gather(invs []bridge.Invocation) []gathered {
	type done struct {
		i int
		gathered
	}
	ch := make(chan done, len(invs))
	for i, inv := range invs {
		go func() {
			out, err := inv()
			ch <- done{i, gathered{out, err}}
		}()
	}
	out := make([]gathered, len(invs))
	for left := len(invs); left > 0; left-- {
		s.idle(left, s.cpu())
		d := <-ch
		out[d.i] = d.gathered
	}
	return out
}

// outcome turns a call's result or error into a status and payload.
func (s *execState) outcome(name string, out json.RawMessage, err error) (int32, []byte) {
	if err == nil && len(out) > 0 && !json.Valid(out) {
		err = &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: tools.CodeInvalidOutput, Message: "tool returned invalid JSON"}
	}
	if err != nil {
		e := s.abiError(name, err)
		b, _ := json.Marshal(e)
		return abi.StatusError, b
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	return abi.StatusOK, out
}

// abiError converts a failed call into the error object the guest sees.
func (s *execState) abiError(name string, err error) *abi.Error {
	var ce *bridge.CallError
	if !errors.As(err, &ce) {
		return &abi.Error{Name: abi.NameToolError, Tool: name, Code: tools.CodeToolFailed, Message: "the tool call failed"}
	}
	if ce.Kind() == fault.KindToolCallLimit {
		s.mu.Lock()
		if s.callLimit == nil {
			s.callLimit = ce
		}
		s.mu.Unlock()
	}
	e := &abi.Error{Name: ce.Name, Tool: ce.Tool, Code: ce.Code, Message: ce.Message}
	for _, v := range ce.Errors {
		e.Errors = append(e.Errors, abi.Violation{Path: v.Path, Keyword: v.Keyword, Message: v.Message})
	}
	return e
}

// batch runs calls concurrently (at most maxConcurrent at once; the bridge
// applies its own bound too) and returns the results in request order. The
// calls are started (numbered, budgeted, validated) one by one in request
// order, so the audit trace follows the request; only their invocations
// run concurrently.
func (s *execState) batch(ctx context.Context, calls []abi.BatchCall) []abi.BatchResult {
	invs := make([]bridge.Invocation, len(calls))
	for i, c := range calls {
		calls[i].Tool = toolName([]byte(c.Tool))
		invs[i] = s.tools.Start(ctx, calls[i].Tool, callArgs(c.Args))
	}
	results := make([]abi.BatchResult, len(calls))
	if s.idle != nil {
		for i, g := range s.gather(invs) {
			results[i] = s.batchResult(calls[i].Tool, g.out, g.err)
		}
		return results
	}
	workers := s.maxConcurrent
	if workers > len(calls) {
		workers = len(calls)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	// Each worker ends when next is closed; batch waits for all of them
	// before it returns, so no goroutine outlives the host call.
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out, err := invs[i]()
				results[i] = s.batchResult(calls[i].Tool, out, err)
			}
		}()
	}
	for i := range calls {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// batchResult is one call's entry in a batch's results.
func (s *execState) batchResult(tool string, out json.RawMessage, err error) abi.BatchResult {
	status, payload := s.outcome(tool, out, err)
	if status == abi.StatusOK {
		return abi.BatchResult{OK: true, Result: payload}
	}
	var e abi.Error
	if json.Unmarshal(payload, &e) != nil {
		e = abi.Error{Name: abi.NameToolError, Tool: tool, Code: tools.CodeToolFailed, Message: "the tool call failed"}
	}
	return abi.BatchResult{Error: &e}
}

// memory returns the guest's memory or traps. (wazero's Memory returns a
// non-nil interface around a nil instance when there is no memory, hence
// the flag from the module's shape.)
func memory(st *execState, mod api.Module) api.Memory {
	mem := mod.Memory()
	if !st.hasMemory || mem == nil {
		trapf("the module has no memory; define and export one as \"memory\"")
	}
	return mem
}

// readBytes copies length bytes at ptr out of guest memory, trapping when
// the range is outside it.
func readBytes(mem api.Memory, ptr, length uint32, what string) []byte {
	if length == 0 {
		return nil
	}
	b, ok := mem.Read(ptr, length)
	if !ok {
		trapf("%s (offset %d, length %d) is outside the module's memory of %d bytes", what, ptr, length, mem.Size())
	}
	return append([]byte(nil), b...)
}

// checkOut traps unless an out record fits at ptr.
func checkOut(mem api.Memory, ptr uint32) {
	if _, ok := mem.Read(ptr, abi.OutSize); !ok {
		trapf("out_ptr %d does not leave %d bytes inside the module's memory of %d bytes", ptr, abi.OutSize, mem.Size())
	}
}

// deliver stores payload under a new handle and writes the out record.
func deliver(st *execState, mem api.Memory, outPtr uint32, payload []byte) {
	if len(payload) > math.MaxInt32 {
		b, _ := json.Marshal(&abi.Error{Name: abi.NameToolError, Code: tools.CodeToolFailed,
			Message: fmt.Sprintf("the result is %d bytes, more than the ABI can deliver; ask for less data", len(payload))})
		payload = b
	}
	h := st.put(payload)
	if !mem.WriteUint32Le(outPtr, h) || !mem.WriteUint32Le(outPtr+4, uint32(len(payload))) {
		trapf("out_ptr %d is outside the module's memory", outPtr)
	}
}

// hostCall implements ptc_v1.call(name_ptr, name_len, args_ptr, args_len, out_ptr) -> status.
func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateOf(ctx)
	mem := memory(st, mod)
	namePtr, nameLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	argsPtr, argsLen := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	outPtr := api.DecodeU32(stack[4])
	checkRunning(ctx)
	checkOut(mem, outPtr)
	st.checkPending()

	var status int32
	var payload []byte
	if nameLen > abi.MaxNameBytes {
		if _, ok := mem.Read(namePtr, nameLen); !ok {
			trapf("tool name (offset %d, length %d) is outside the module's memory of %d bytes", namePtr, nameLen, mem.Size())
		}
		// The call still goes through the bridge — counted and traced,
		// an unknown tool — under a stand-in for the name, never echoed.
		status, payload = st.call(ctx, fmt.Sprintf("(a name of %d bytes)", nameLen), nil)
	} else {
		name := toolName(readBytes(mem, namePtr, nameLen, "tool name"))
		args := callArgs(readBytes(mem, argsPtr, argsLen, "arguments"))
		status, payload = st.call(ctx, name, args)
	}
	deliver(st, mem, outPtr, payload)
	stack[0] = api.EncodeI32(status)
}

// toolName is the name a call goes through the bridge under. A name that
// is not valid UTF-8 is no tool's name: the call goes through under a
// quoted stand-in (which no tool can have), so that it is refused as an
// unknown tool, counted and traced like any other, and so that the name
// can cross process boundaries and gRPC as text.
func toolName(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return fmt.Sprintf("%q (not valid UTF-8)", b)
}

// callArgs normalises a call's arguments: none (length 0), only
// whitespace, or null mean {} (docs/wasm-abi.md §4), so that the call is
// validated, journaled and compared on resume as the same {} whichever
// way the guest said it.
func callArgs(b []byte) json.RawMessage {
	if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}")
	}
	return b
}

// hostCallBatch implements ptc_v1.call_batch(req_ptr, req_len, out_ptr) -> status.
func hostCallBatch(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateOf(ctx)
	mem := memory(st, mod)
	reqPtr, reqLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	outPtr := api.DecodeU32(stack[2])
	checkRunning(ctx)
	checkOut(mem, outPtr)
	st.checkPending()

	var status int32
	var payload []byte
	if reqLen > abi.MaxBatchBytes {
		status = abi.StatusError
		payload, _ = json.Marshal(&abi.Error{Name: abi.NameArgumentError, Code: abi.CodeInvalidBatch,
			Message: fmt.Sprintf("batch request is %d bytes, more than the %d allowed; split the batch", reqLen, abi.MaxBatchBytes)})
	} else {
		req := readBytes(mem, reqPtr, reqLen, "batch request")
		calls, err := abi.ParseBatch(req)
		if err != nil {
			status = abi.StatusError
			payload, _ = json.Marshal(&abi.Error{Name: abi.NameArgumentError, Code: abi.CodeInvalidBatch, Message: err.Error()})
		} else {
			results := st.batch(ctx, calls)
			var merr error
			payload, merr = json.Marshal(results)
			if merr != nil {
				status = abi.StatusError
				payload, _ = json.Marshal(&abi.Error{Name: abi.NameToolError, Code: tools.CodeToolFailed, Message: "the batch results could not be encoded"})
			}
		}
	}
	deliver(st, mem, outPtr, payload)
	stack[0] = api.EncodeI32(status)
}

// hostRead implements ptc_v1.read(handle, buf_ptr, buf_len) -> length.
func hostRead(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateOf(ctx)
	mem := memory(st, mod)
	h, bufPtr, bufLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	p, ok := st.take(h)
	if !ok {
		trapf("read: unknown result handle %d; each handle can be read or dropped once", h)
	}
	if uint64(bufLen) < uint64(len(p)) {
		trapf("read: buffer of %d bytes is too small for result %d of %d bytes; allocate the length from the out record", bufLen, h, len(p))
	}
	if !mem.Write(bufPtr, p) {
		trapf("read: buffer (offset %d, length %d) is outside the module's memory of %d bytes", bufPtr, len(p), mem.Size())
	}
	st.drop(h)
	stack[0] = api.EncodeI32(int32(len(p)))
}

// hostDrop implements ptc_v1.drop(handle).
func hostDrop(ctx context.Context, _ api.Module, stack []uint64) {
	st := stateOf(ctx)
	h := api.DecodeU32(stack[0])
	if !st.drop(h) {
		trapf("drop: unknown result handle %d; each handle can be read or dropped once", h)
	}
}

// hostFunctions describes the ptc_v1 module.
var hostFunctions = []struct {
	name    string
	fn      api.GoModuleFunc
	params  []api.ValueType
	results []api.ValueType
}{
	{abi.FuncCall, hostCall, []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	{abi.FuncCallBatch, hostCallBatch, []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	{abi.FuncRead, hostRead, []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	{abi.FuncDrop, hostDrop, []api.ValueType{api.ValueTypeI32}, nil},
}

// instantiateHost adds the ptc_v1 module to rt.
func instantiateHost(ctx context.Context, rt wazero.Runtime) (api.Module, error) {
	b := rt.NewHostModuleBuilder(abi.ModuleName)
	for _, f := range hostFunctions {
		b.NewFunctionBuilder().WithGoModuleFunction(f.fn, f.params, f.results).Export(f.name)
	}
	return b.Instantiate(ctx)
}
