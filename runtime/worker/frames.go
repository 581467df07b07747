package worker

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	workerv1 "github.com/ptcrun/ptc/proto/ptc/worker/v1"
	"github.com/ptcrun/ptc/tools"
)

// DefaultMaxFrameBytes bounds one frame on either side: a tool result of
// bridge.MaxResultBytes plus room for the envelope.
const DefaultMaxFrameBytes = bridge.MaxResultBytes + 1<<20

// frameReader reads length-delimited frames of bounded size.
type frameReader struct {
	r   *bufio.Reader
	opt protodelim.UnmarshalOptions
}

func newFrameReader(r io.Reader, maxBytes int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), opt: protodelim.UnmarshalOptions{MaxSize: int64(maxBytes)}}
}

// read reads one frame into m. io.EOF means the peer closed cleanly.
func (f *frameReader) read(m proto.Message) error {
	proto.Reset(m)
	err := f.opt.UnmarshalFrom(f.r, m)
	var big *protodelim.SizeTooLargeError
	if errors.As(err, &big) {
		return fmt.Errorf("frame of %d bytes is larger than the %d allowed", big.Size, f.opt.MaxSize)
	}
	return err
}

// frameWriter writes frames; it is safe for concurrent use and keeps the
// order of the calls that hold its lock.
type frameWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	buf []byte
	// before, when set, runs before each write (e.g. to set a deadline).
	before func()
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// write sends one frame.
func (f *frameWriter) write(m proto.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.before != nil {
		f.before()
	}
	var err error
	f.buf, err = proto.MarshalOptions{}.MarshalAppend(f.buf[:0], m)
	if err != nil {
		return err
	}
	var hdr [binary.MaxVarintLen64]byte
	if _, err := f.w.Write(protowire.AppendVarint(hdr[:0], uint64(len(f.buf)))); err != nil {
		return err
	}
	if _, err := f.w.Write(f.buf); err != nil {
		return err
	}
	if cap(f.buf) > 1<<20 {
		f.buf = nil
	}
	return f.w.Flush()
}

// limitsPB converts limits for an Execute frame.
func limitsPB(l limits.Limits) *ptcv1.Limits {
	return &ptcv1.Limits{
		Timeout:                durationPB(l.Timeout),
		CpuTime:                durationPB(l.CPUTime),
		MemoryBytes:            l.MemoryBytes,
		MaxToolCalls:           l.MaxToolCalls,
		MaxConcurrentToolCalls: l.MaxConcurrentToolCalls,
		MaxOutputBytes:         l.MaxOutputBytes,
		MaxLogBytes:            l.MaxLogBytes,
	}
}

// limitsFromPB converts the limits of an Execute frame; invalid durations
// become zero and negative values are rejected.
func limitsFromPB(l *ptcv1.Limits) (limits.Limits, error) {
	out := limits.Limits{
		Timeout:                durationFromPB(l.GetTimeout()),
		CPUTime:                durationFromPB(l.GetCpuTime()),
		MemoryBytes:            l.GetMemoryBytes(),
		MaxToolCalls:           l.GetMaxToolCalls(),
		MaxConcurrentToolCalls: l.GetMaxConcurrentToolCalls(),
		MaxOutputBytes:         l.GetMaxOutputBytes(),
		MaxLogBytes:            l.GetMaxLogBytes(),
	}
	return out, out.CheckRequest()
}

func durationPB(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

func durationFromPB(d *durationpb.Duration) time.Duration {
	if d == nil || d.CheckValid() != nil {
		return 0
	}
	if v := d.AsDuration(); v > 0 {
		return v
	}
	return 0
}

// errorPB converts a classified failure for a Done frame.
func errorPB(fe *fault.Error) *ptcv1.ExecutionError { return wire.ErrorPB(fe) }

// errorFromPB converts the failure of a Done frame. A kind outside the
// known set becomes INTERNAL: the worker is not trusted to invent kinds.
func errorFromPB(e *ptcv1.ExecutionError) *fault.Error {
	if e == nil {
		return nil
	}
	k := fault.Kind(e.GetKind())
	if k <= fault.KindUnspecified || k > fault.KindInternal {
		return fault.New(fault.KindInternal, "the worker reported an unknown error kind %d", int32(k))
	}
	return &fault.Error{
		Kind:     k,
		Message:  e.GetMessage(),
		Line:     nonNegative(e.GetLine()),
		Column:   nonNegative(e.GetColumn()),
		Stack:    e.GetStack(),
		Tool:     e.GetTool(),
		Limit:    e.GetLimit(),
		Observed: e.GetObserved(),
	}
}

func nonNegative(v int32) int {
	if v < 0 {
		return 0
	}
	return int(v)
}

// callErrorPB converts a failed tool call for a ToolReply frame.
func callErrorPB(err error) *workerv1.CallError {
	var ce *bridge.CallError
	if !errors.As(err, &ce) {
		ce = &bridge.CallError{Name: bridge.NameToolError, Code: bridge.CodeToolFailed, Message: err.Error()}
	}
	out := &workerv1.CallError{Name: ce.Name, Tool: ce.Tool, Code: ce.Code, Message: ce.Message}
	for _, v := range ce.Errors {
		out.Violations = append(out.Violations, &workerv1.Violation{Path: v.Path, Keyword: v.Keyword, Message: v.Message})
	}
	return out
}

// callErrorFromPB converts the failure of a ToolReply frame.
func callErrorFromPB(e *workerv1.CallError) *bridge.CallError {
	ce := &bridge.CallError{Name: e.GetName(), Tool: e.GetTool(), Code: e.GetCode(), Message: e.GetMessage()}
	for _, v := range e.GetViolations() {
		ce.Errors = append(ce.Errors, tools.Violation{Path: v.GetPath(), Keyword: v.GetKeyword(), Message: v.GetMessage()})
	}
	return ce
}

// validResult reports whether b is acceptable as a result from a worker.
func validResult(b []byte, maxBytes int64) bool {
	if maxBytes > 0 && int64(len(b)) > maxBytes {
		return false
	}
	return json.Valid(b)
}
