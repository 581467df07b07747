// Package limits holds the one Limits type of ptc and the one place where a
// request's limits are clamped to an operator's defaults and ceilings.
package limits

import (
	"fmt"
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
	// MaxLogBytes bounds the captured console output; the rest is dropped and marked.
	MaxLogBytes int64
}

// Defaults are the limits used when a request leaves a field at zero.
func Defaults() Limits {
	return Limits{
		Timeout:                30 * time.Second,
		CPUTime:                10 * time.Second,
		MemoryBytes:            256 << 20,
		MaxToolCalls:           1000,
		MaxConcurrentToolCalls: 16,
		MaxOutputBytes:         1 << 20,
		MaxLogBytes:            64 << 10,
	}
}

// Ceilings are the largest limits a request may ask for unless the operator
// sets others.
func Ceilings() Limits {
	return Limits{
		Timeout:                5 * time.Minute,
		CPUTime:                2 * time.Minute,
		MemoryBytes:            2 << 30,
		MaxToolCalls:           100000,
		MaxConcurrentToolCalls: 256,
		MaxOutputBytes:         16 << 20,
		MaxLogBytes:            4 << 20,
	}
}

// Policy is an operator's pair of defaults and ceilings.
type Policy struct {
	Defaults Limits
	Ceilings Limits
}

// DefaultPolicy returns Defaults() and Ceilings().
func DefaultPolicy() Policy { return Policy{Defaults: Defaults(), Ceilings: Ceilings()} }

// Validate reports a negative field or a default above its ceiling.
func (p Policy) Validate() error {
	if err := p.Defaults.checkNonNegative("default"); err != nil {
		return err
	}
	if err := p.Ceilings.checkNonNegative("ceiling"); err != nil {
		return err
	}
	if p.Defaults.min(p.Ceilings) != p.Defaults {
		return fmt.Errorf("limits: a default is above its ceiling (defaults %+v, ceilings %+v)", p.Defaults, p.Ceilings)
	}
	return nil
}

// Resolve returns the effective limits of a request: zero fields take the
// default, and every field is clamped to its ceiling. Negative fields are
// treated as zero (callers reject them earlier with CheckRequest).
func (p Policy) Resolve(req Limits) Limits {
	d := p.Defaults.fill(p.Ceilings)
	return req.fill(d).min(p.Ceilings)
}

// Cap returns l with every field no larger than the matching non-zero
// field of c; a zero field of l (not set) takes c's value. A tenant's
// ceilings narrow a server policy this way.
func (l Limits) Cap(c Limits) Limits { return l.fill(c).min(c) }

// CheckRequest reports negative values in a request's limits.
func (l Limits) CheckRequest() error { return l.checkNonNegative("requested") }

func (l Limits) checkNonNegative(what string) error {
	switch {
	case l.Timeout < 0:
		return fmt.Errorf("%s timeout is negative", what)
	case l.CPUTime < 0:
		return fmt.Errorf("%s cpu_time is negative", what)
	case l.MemoryBytes < 0:
		return fmt.Errorf("%s memory_bytes is negative", what)
	case l.MaxToolCalls < 0:
		return fmt.Errorf("%s max_tool_calls is negative", what)
	case l.MaxConcurrentToolCalls < 0:
		return fmt.Errorf("%s max_concurrent_tool_calls is negative", what)
	case l.MaxOutputBytes < 0:
		return fmt.Errorf("%s max_output_bytes is negative", what)
	case l.MaxLogBytes < 0:
		return fmt.Errorf("%s max_log_bytes is negative", what)
	}
	return nil
}

// fill returns l with every zero (or negative) field taken from d.
func (l Limits) fill(d Limits) Limits {
	pick := func(v, dv int64) int64 {
		if v <= 0 {
			return dv
		}
		return v
	}
	return Limits{
		Timeout:                time.Duration(pick(int64(l.Timeout), int64(d.Timeout))),
		CPUTime:                time.Duration(pick(int64(l.CPUTime), int64(d.CPUTime))),
		MemoryBytes:            pick(l.MemoryBytes, d.MemoryBytes),
		MaxToolCalls:           int32(pick(int64(l.MaxToolCalls), int64(d.MaxToolCalls))),
		MaxConcurrentToolCalls: int32(pick(int64(l.MaxConcurrentToolCalls), int64(d.MaxConcurrentToolCalls))),
		MaxOutputBytes:         pick(l.MaxOutputBytes, d.MaxOutputBytes),
		MaxLogBytes:            pick(l.MaxLogBytes, d.MaxLogBytes),
	}
}

// min returns l with every field no larger than the matching non-zero field of c.
func (l Limits) min(c Limits) Limits {
	clamp := func(v, cv int64) int64 {
		if cv > 0 && v > cv {
			return cv
		}
		return v
	}
	return Limits{
		Timeout:                time.Duration(clamp(int64(l.Timeout), int64(c.Timeout))),
		CPUTime:                time.Duration(clamp(int64(l.CPUTime), int64(c.CPUTime))),
		MemoryBytes:            clamp(l.MemoryBytes, c.MemoryBytes),
		MaxToolCalls:           int32(clamp(int64(l.MaxToolCalls), int64(c.MaxToolCalls))),
		MaxConcurrentToolCalls: int32(clamp(int64(l.MaxConcurrentToolCalls), int64(c.MaxConcurrentToolCalls))),
		MaxOutputBytes:         clamp(l.MaxOutputBytes, c.MaxOutputBytes),
		MaxLogBytes:            clamp(l.MaxLogBytes, c.MaxLogBytes),
	}
}
