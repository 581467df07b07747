package jsonschema

// ptc: this file is not in v6.0.3. It bounds one validation (see
// README.md).

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/ptcrun/ptc/internal/jsonschema/kind"
)

// ErrLimit is returned by ValidateWithin when the validation took all
// the steps its Limit allows.
var ErrLimit = errors.New("jsonschema: validation took more steps than its limit allows")

// ErrStopped is returned by ValidateWithin when its Limit's Done channel
// closed before the validation ended.
var ErrStopped = errors.New("jsonschema: validation stopped")

// Limit bounds one validation by ValidateWithin.
type Limit struct {
	// Steps is the most steps the validation may take. Applying a
	// subschema to a value is one step and more for a large value (one
	// for every 64 bytes of a string or number, one for every member of
	// an object or array), and making an error is one.
	Steps int64
	// Done, when it closes, stops the validation (nil: never).
	Done <-chan struct{}
	// Quick asks only whether the value matches: the error returned for
	// a value that does not match does not say why.
	Quick bool
}

// limiter counts one validation's steps. A nil limiter counts nothing.
type limiter struct {
	left  int64
	done  <-chan struct{}
	since int64 // steps since Done was last looked at
}

// limitReached is what a limiter panics with; ValidateWithin recovers it.
type limitReached struct{ err error }

// spend takes n steps, and panics with limitReached when they run out or
// Done has closed.
func (l *limiter) spend(n int64) {
	if l == nil {
		return
	}
	l.left -= n
	if l.left < 0 {
		panic(limitReached{ErrLimit})
	}
	if l.since += n; l.done != nil && l.since >= 1024 {
		l.since = 0
		select {
		case <-l.done:
			panic(limitReached{ErrStopped})
		default:
		}
	}
}

// weight is the steps applying one subschema to v takes beyond the first.
func weight(v any) int64 {
	switch v := v.(type) {
	case string:
		return int64(len(v) / 64)
	case fmt.Stringer: // json.Number
		return int64(len(v.String()) / 64)
	case map[string]any:
		return int64(len(v))
	case []any:
		return int64(len(v))
	}
	return 0
}

// ValidateWithin is Validate within lim. It returns ErrLimit when the
// steps run out and ErrStopped when lim.Done closes first; a panic in
// the validator (a value it cannot handle) is returned as an error too.
func (sch *Schema) ValidateWithin(v any, lim Limit) (err error) {
	l := &limiter{left: lim.Steps, done: lim.Done}
	defer func() {
		if r := recover(); r != nil {
			if lr, ok := r.(limitReached); ok {
				err = lr.err
				return
			}
			err = fmt.Errorf("jsonschema: validation failed: %v", r)
		}
	}()
	return sch.validateLimited(v, l, lim.Quick)
}

// Numbers past these bounds are not turned into big.Rat: the conversion
// of a number of a million digits takes seconds, and one whose exponent
// is past ±1e6 fails.
const (
	maxRatLen      = 1000
	maxRatExponent = 1000
)

// ratOf is v as a big.Rat, and false when v is not a number or is past
// maxRatLen or maxRatExponent.
func ratOf(v any) (*big.Rat, bool) {
	s := fmt.Sprint(v)
	if len(s) > maxRatLen {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > maxRatExponent || e < -maxRatExponent {
			return nil, false
		}
	}
	return new(big.Rat).SetString(s)
}

// numberRange is the error for a number ratOf refuses.
func numberRange(v any) *kind.NumberRange {
	s := fmt.Sprint(v)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return &kind.NumberRange{Got: s, MaxLen: maxRatLen, MaxExponent: maxRatExponent}
}

// ExactNumber reports whether the library compares the number v exactly:
// a number past maxRatLen characters or an exponent of ±maxRatExponent
// fails every numeric keyword and equals only its own spelling.
func ExactNumber(v any) bool {
	_, ok := ratOf(v)
	return ok
}

// size is the number of JSON values in v: the steps comparing a value to
// v (const, enum) takes at most.
func size(v any) int64 {
	n := int64(1)
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			n += size(e)
		}
	case []any:
		for _, e := range v {
			n += size(e)
		}
	case string:
		n += int64(len(v) / 64)
	}
	return n
}

// regexCost is the steps matching re against a string of n bytes takes:
// Go's regexp runs in time proportional to the text times the program.
func regexCost(re Regexp, n int) int64 {
	return 1 + int64(n)*int64(len(re.String()))/256
}
