// Package limits holds the one Limits type of ptc, the one table that
// describes its fields, and the one place where a request's limits are
// clamped to an operator's defaults and ceilings (Policy.Resolve).
//
// Everything that handles limits field by field walks the table (Fields):
// validation, defaulting and clamping, text, JSON and YAML marshalling, the
// config keys and flags, the worker frames, the proto conversion and the
// error messages. Adding a limit is one row here and one field in Limits
// (and the same field in ptc.Limits and ptc.v1.Limits).
//
// It imports only the standard library.
package limits

import (
	"fmt"
	"math"
	"time"
	"unsafe"
)

// Limits bounds one execution. A zero field means "not set": Resolve replaces
// it with the operator default.
type Limits struct {
	// Timeout is the wall-clock budget of the execution, tool waits included
	// (time paused for the caller excluded).
	Timeout time.Duration
	// CPUTime is the time the sandbox itself may compute.
	CPUTime time.Duration
	// MemoryBytes is the memory the sandbox may hold.
	MemoryBytes int64
	// MaxToolCalls is the number of tool calls an execution may start.
	MaxToolCalls int32
	// MaxConcurrentToolCalls bounds the calls in flight at once; more queue.
	MaxConcurrentToolCalls int32
	// MaxOutputBytes bounds the size of the result JSON.
	MaxOutputBytes int64
	// MaxLogBytes bounds the captured console output, each entry costing
	// LogEntryOverhead bytes besides its text; the rest is dropped and
	// marked.
	MaxLogBytes int64
	// MaxLogEntries bounds the number of captured console entries; the rest
	// are dropped and marked.
	MaxLogEntries int32
	// MaxResultTokens bounds the approximate model tokens of the result
	// JSON (counted as ListTools counts them, prompt.ApproxTokens).
	MaxResultTokens int32
	// MaxPauses bounds how often a resumable execution may pause for its
	// caller (a client tool call or an approval).
	MaxPauses int32
	// MaxPausedTime bounds the total time a resumable execution may wait
	// paused, across all its pauses; it is not part of Timeout.
	MaxPausedTime time.Duration
}

// LogEntryOverhead is what every log entry costs against MaxLogBytes besides
// its text, so that empty entries are not free.
const LogEntryOverhead = 16

// Unit is the unit of a limit's value.
type Unit int

// The units.
const (
	// Duration values are nanoseconds, written as Go durations ("1.5s").
	Duration Unit = iota + 1
	// Bytes values are written as an integer or with a unit ("64MiB").
	Bytes
	// Count values are integers.
	Count
)

// Field describes one field of Limits: its name (as in the proto, the
// config file and JSON), its unit, what it bounds, its built-in default
// and ceiling, and which field of Limits it is.
type Field struct {
	// Name is the field's name in ptc.v1.Limits, in config keys and in
	// JSON, e.g. "timeout".
	Name string
	// Unit is the unit of its values.
	Unit Unit
	// Doc says what the limit bounds, for flag usage and messages.
	Doc string
	// Default and Ceiling are the built-in default and ceiling.
	Default, Ceiling int64
	// Max is the largest value the field can hold.
	Max int64

	// off is the field's offset in Limits and i32 tells an int32 field
	// from an int64 one (time.Duration is an int64). A row names its field
	// by unsafe.Offsetof, so reading and writing a field is a load and a
	// store: Check and Resolve run on every request and must not allocate
	// or call through func values. TestTableMatchesStruct checks every row
	// against the struct's fields and types.
	off uintptr
	i32 bool
}

// ptr returns the address of the field in l.
func (f *Field) ptr(l *Limits) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(l), f.off) }

// Get returns the field's value in l.
func (f Field) Get(l Limits) int64 { return (&f).get(&l) }

// Set sets the field's value in l; v must be within [0, Max].
func (f Field) Set(l *Limits, v int64) { (&f).set(l, v) }

func (f *Field) get(l *Limits) int64 {
	if f.i32 {
		return int64(*(*int32)(f.ptr(l)))
	}
	return *(*int64)(f.ptr(l))
}

func (f *Field) set(l *Limits, v int64) {
	if f.i32 {
		*(*int32)(f.ptr(l)) = int32(v)
		return
	}
	*(*int64)(f.ptr(l)) = v
}

// durationField describes a time.Duration field of Limits at off.
func durationField(name, doc string, def, ceil time.Duration, off uintptr) Field {
	return Field{Name: name, Unit: Duration, Doc: doc, Default: int64(def), Ceiling: int64(ceil), Max: math.MaxInt64, off: off}
}

// bytesField describes an int64 field of Limits at off.
func bytesField(name, doc string, def, ceil int64, off uintptr) Field {
	return Field{Name: name, Unit: Bytes, Doc: doc, Default: def, Ceiling: ceil, Max: math.MaxInt64, off: off}
}

// countField describes an int32 field of Limits at off.
func countField(name, doc string, def, ceil int32, off uintptr) Field {
	return Field{Name: name, Unit: Count, Doc: doc, Default: int64(def), Ceiling: int64(ceil), Max: math.MaxInt32, off: off, i32: true}
}

// layout is only named for unsafe.Offsetof in the table.
var layout Limits

// table is the one description of the limits, in proto field order.
var table = [...]Field{
	durationField("timeout", "wall-clock time of an execution, tool waits included", 30*time.Second, 5*time.Minute, unsafe.Offsetof(layout.Timeout)),
	durationField("cpu_time", "CPU time of an execution", 10*time.Second, 2*time.Minute, unsafe.Offsetof(layout.CPUTime)),
	bytesField("memory_bytes", "memory of an execution", 256<<20, 2<<30, unsafe.Offsetof(layout.MemoryBytes)),
	countField("max_tool_calls", "tool calls per execution", 1000, 100000, unsafe.Offsetof(layout.MaxToolCalls)),
	countField("max_concurrent_tool_calls", "concurrent tool calls", 16, 256, unsafe.Offsetof(layout.MaxConcurrentToolCalls)),
	bytesField("max_output_bytes", "size of the result JSON", 1<<20, 16<<20, unsafe.Offsetof(layout.MaxOutputBytes)),
	bytesField("max_log_bytes", "size of the captured logs", 64<<10, 4<<20, unsafe.Offsetof(layout.MaxLogBytes)),
	countField("max_log_entries", "captured log entries", 1000, 100000, unsafe.Offsetof(layout.MaxLogEntries)),
	// A result cannot hold more tokens than bytes, so the default and
	// ceiling never bind before max_output_bytes's: a caller (or operator)
	// asks for a tighter token budget.
	countField("max_result_tokens", "approximate model tokens of the result JSON", 1<<20, 16<<20, unsafe.Offsetof(layout.MaxResultTokens)),
	countField("max_pauses", "pauses of a resumable execution", 20, 1000, unsafe.Offsetof(layout.MaxPauses)),
	durationField("max_paused_time", "total time a resumable execution may wait paused", 24*time.Hour, 30*24*time.Hour, unsafe.Offsetof(layout.MaxPausedTime)),
}

// Fields returns the description of every field of Limits, in proto field
// order.
func Fields() []Field { return table[:] }

// FieldByName returns the field named name.
func FieldByName(name string) (Field, bool) {
	for _, f := range table {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Defaults are the limits used when a request leaves a field at zero.
func Defaults() Limits {
	var l Limits
	for _, f := range table {
		f.set(&l, f.Default)
	}
	return l
}

// Ceilings are the largest limits a request may ask for unless the operator
// sets others.
func Ceilings() Limits {
	var l Limits
	for _, f := range table {
		f.set(&l, f.Ceiling)
	}
	return l
}

// Policy is an operator's pair of defaults and ceilings.
type Policy struct {
	Defaults Limits
	Ceilings Limits
}

// DefaultPolicy returns Defaults() and Ceilings().
func DefaultPolicy() Policy { return Policy{Defaults: Defaults(), Ceilings: Ceilings()} }

// Validate reports a negative field or a default above its ceiling, naming
// the setting: "limits.defaults.timeout: 10m0s is above its ceiling 5m0s;
// lower the default or raise the ceiling".
func (p Policy) Validate() error {
	if err := p.Defaults.check("limits.defaults."); err != nil {
		return err
	}
	if err := p.Ceilings.check("limits.ceilings."); err != nil {
		return err
	}
	for _, f := range table {
		d, c := f.get(&p.Defaults), f.get(&p.Ceilings)
		if c > 0 && d > c {
			return fmt.Errorf("limits.defaults.%s: %s is above its ceiling %s; lower the default or raise the ceiling",
				f.Name, f.Format(d), f.Format(c))
		}
	}
	return nil
}

// Resolve returns the effective limits of a request: the policy's ceilings
// are narrowed by tenant (a zero field of tenant adds no cap), zero fields of
// req take the default (itself no higher than the narrowed ceiling), and
// every field is clamped to the narrowed ceiling. It is the one place where
// limits are clamped; negative fields of req are treated as zero (Check
// refuses them first).
func (p Policy) Resolve(req, tenant Limits) Limits {
	var out Limits
	for i := range table {
		f := &table[i]
		ceil := capValue(f.get(&p.Ceilings), f.get(&tenant))
		v := f.get(&req)
		if v <= 0 {
			v = capValue(f.get(&p.Defaults), ceil)
		}
		if ceil > 0 && v > ceil {
			v = ceil
		}
		f.set(&out, v)
	}
	return out
}

// Cap returns l with every field no larger than the matching non-zero field
// of c; a zero (or negative) field of l takes c's value.
func (l Limits) Cap(c Limits) Limits {
	var out Limits
	for i := range table {
		f := &table[i]
		f.set(&out, capValue(f.get(&l), f.get(&c)))
	}
	return out
}

// capValue is v capped by c, or c when v is not set (zero or negative).
func capValue(v, c int64) int64 {
	if v <= 0 || (c > 0 && v > c) {
		return c
	}
	return v
}

// Check reports a negative field: "limits.timeout is negative (-1s)".
func (l Limits) Check() error { return l.check("limits.") }

func (l Limits) check(prefix string) error {
	for i := range table {
		f := &table[i]
		if v := f.get(&l); v < 0 {
			return fmt.Errorf("%s%s is negative (%s); use 0 for the default or a positive value", prefix, f.Name, f.Format(v))
		}
	}
	return nil
}

// IsZero reports whether no field is set.
func (l Limits) IsZero() bool { return l == Limits{} }
