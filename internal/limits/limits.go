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
)

// Limits bounds one execution. A zero field means "not set": Resolve replaces
// it with the operator default.
type Limits struct {
	// Timeout is the wall-clock budget of the execution, tool waits included.
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
// and ceiling, and how to read and write it.
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

	get func(*Limits) int64
	set func(*Limits, int64)
}

// Get returns the field's value in l.
func (f Field) Get(l Limits) int64 { return f.get(&l) }

// Set sets the field's value in l; v must be within [0, Max].
func (f Field) Set(l *Limits, v int64) { f.set(l, v) }

func durationField(name, doc string, def, ceil time.Duration, p func(*Limits) *time.Duration) Field {
	return Field{Name: name, Unit: Duration, Doc: doc, Default: int64(def), Ceiling: int64(ceil), Max: math.MaxInt64,
		get: func(l *Limits) int64 { return int64(*p(l)) }, set: func(l *Limits, v int64) { *p(l) = time.Duration(v) }}
}

func bytesField(name, doc string, def, ceil int64, p func(*Limits) *int64) Field {
	return Field{Name: name, Unit: Bytes, Doc: doc, Default: def, Ceiling: ceil, Max: math.MaxInt64,
		get: func(l *Limits) int64 { return *p(l) }, set: func(l *Limits, v int64) { *p(l) = v }}
}

func countField(name, doc string, def, ceil int32, p func(*Limits) *int32) Field {
	return Field{Name: name, Unit: Count, Doc: doc, Default: int64(def), Ceiling: int64(ceil), Max: math.MaxInt32,
		get: func(l *Limits) int64 { return int64(*p(l)) }, set: func(l *Limits, v int64) { *p(l) = int32(v) }}
}

// table is the one description of the limits, in proto field order.
var table = [...]Field{
	durationField("timeout", "wall-clock time of an execution, tool waits included", 30*time.Second, 5*time.Minute,
		func(l *Limits) *time.Duration { return &l.Timeout }),
	durationField("cpu_time", "CPU time of an execution", 10*time.Second, 2*time.Minute,
		func(l *Limits) *time.Duration { return &l.CPUTime }),
	bytesField("memory_bytes", "memory of an execution", 256<<20, 2<<30,
		func(l *Limits) *int64 { return &l.MemoryBytes }),
	countField("max_tool_calls", "tool calls per execution", 1000, 100000,
		func(l *Limits) *int32 { return &l.MaxToolCalls }),
	countField("max_concurrent_tool_calls", "concurrent tool calls", 16, 256,
		func(l *Limits) *int32 { return &l.MaxConcurrentToolCalls }),
	bytesField("max_output_bytes", "size of the result JSON", 1<<20, 16<<20,
		func(l *Limits) *int64 { return &l.MaxOutputBytes }),
	bytesField("max_log_bytes", "size of the captured logs", 64<<10, 4<<20,
		func(l *Limits) *int64 { return &l.MaxLogBytes }),
	countField("max_log_entries", "captured log entries", 1000, 100000,
		func(l *Limits) *int32 { return &l.MaxLogEntries }),
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
	ceil := p.Ceilings.Cap(tenant)
	def := p.Defaults.Cap(ceil)
	var out Limits
	for _, f := range table {
		v, d, c := f.get(&req), f.get(&def), f.get(&ceil)
		if v <= 0 {
			v = d
		}
		if c > 0 && v > c {
			v = c
		}
		f.set(&out, v)
	}
	return out
}

// Cap returns l with every field no larger than the matching non-zero field
// of c; a zero (or negative) field of l takes c's value.
func (l Limits) Cap(c Limits) Limits {
	var out Limits
	for _, f := range table {
		v, cv := f.get(&l), f.get(&c)
		if v <= 0 || (cv > 0 && v > cv) {
			v = cv
		}
		f.set(&out, v)
	}
	return out
}

// Check reports a negative field: "limits.timeout is negative (-1s)".
func (l Limits) Check() error { return l.check("limits.") }

func (l Limits) check(prefix string) error {
	for _, f := range table {
		if v := f.get(&l); v < 0 {
			return fmt.Errorf("%s%s is negative (%s); use 0 for the default or a positive value", prefix, f.Name, f.Format(v))
		}
	}
	return nil
}

// IsZero reports whether no field is set.
func (l Limits) IsZero() bool { return l == Limits{} }
