package jsonschema

// ptc: this file is not in v6.0.3. It bounds one validation (see
// README.md).

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"

	"github.com/ptcrun/ptc/internal/jsonschema/kind"
)

// ErrLimit is returned by ValidateWithin when the validation took all
// the steps or errors its Limit allows, or passed its deadline.
var ErrLimit = errors.New("jsonschema: validation took more steps than its limit allows")

// ErrStopped is returned by ValidateWithin when its Limit's Done channel
// closed before the validation ended.
var ErrStopped = errors.New("jsonschema: validation stopped")

// Limit bounds one validation by ValidateWithin.
//
// Steps model what each piece of the validation costs; Deadline backs
// them up, for costs the model misses (it is looked at between steps, so
// one step's work is not cut short).
type Limit struct {
	// Steps is the most steps the validation may take. Applying a
	// subschema to a value is one step and more for a large value (one
	// for every 64 bytes of a string or number, one for every member of
	// an object or array), and making an error is one.
	Steps int64
	// Done, when it closes, stops the validation (nil: never).
	Done <-chan struct{}
	// Deadline, when not zero, stops the validation with ErrLimit once
	// it has passed.
	Deadline time.Time
	// Errors bounds the errors the validation makes (0: no bound): a
	// failed branch's error is kept until its anyOf ends, in the quick
	// mode too. Past it, the validation ends with ErrLimit.
	Errors int64
	// Quick asks only whether the value matches: the error returned for
	// a value that does not match does not say why.
	Quick bool
}

// limiter counts one validation's steps. A nil limiter counts nothing.
type limiter struct {
	left     int64
	done     <-chan struct{}
	deadline time.Time
	errors   int64 // errors it may still make
	since    int64 // steps since Done and the deadline were looked at
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
	if l.since += n; l.since >= 1024 {
		l.since = 0
		if l.done != nil {
			select {
			case <-l.done:
				panic(limitReached{ErrStopped})
			default:
			}
		}
		if !l.deadline.IsZero() && time.Now().After(l.deadline) {
			panic(limitReached{ErrLimit})
		}
	}
}

// error takes the n steps of making an error, and counts it.
func (l *limiter) error(n int64) {
	if l == nil {
		return
	}
	if l.errors--; l.errors < 0 {
		panic(limitReached{ErrLimit})
	}
	l.spend(n)
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
	l := &limiter{left: lim.Steps, done: lim.Done, deadline: lim.Deadline, errors: lim.Errors}
	if l.errors <= 0 {
		l.errors = math.MaxInt64
	}
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
	if e, ok := exponent(s); !ok || e > maxRatExponent || e < -maxRatExponent {
		return nil, false
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

// Size is the number of JSON values in v, and one more for every 64
// bytes of a string or a member name and every 16 of a number: the steps
// comparing a value to v (const, enum) takes at most.
func Size(v any) int64 {
	n := int64(1)
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			n += Size(e) + int64(len(k)/64)
		}
	case []any:
		for _, e := range v {
			n += Size(e)
		}
	case string:
		n += int64(len(v) / 64)
	default:
		n += numCost(v)
	}
	return n
}

// maxMatchWork bounds one match, in text bytes times program
// instructions: Go's regexp can take time in their product (about 25 ns
// each: `[a-z]{1000}` against 100 KB, 2.5 s), and one match cannot be
// stopped once started. 2e7 is about half a second.
const maxMatchWork = 20_000_000

// match takes the steps of matching re against a string of n bytes. A
// match whose worst case passes maxMatchWork is refused (ErrLimit); below
// it, it is charged a fraction of that worst case (most matches run one
// pass over the text), the deadline catching the rest.
func (l *limiter) match(re Regexp, n int) {
	if l == nil {
		return
	}
	insts := len(re.String()) // a Regexp of another engine
	if r, ok := re.(*sizedRegexp); ok {
		insts = r.insts
	}
	work := int64(n) * int64(insts)
	if work > maxMatchWork {
		panic(limitReached{ErrLimit})
	}
	l.spend(1 + work/256)
}

// maxScopeDepth bounds how deeply one validation nests (subschemas
// applied within subschemas): each level is a Go stack frame and a scope
// that checkCycle and $dynamicRef walk.
const maxScopeDepth = 10_000

// numCost is the steps turning v into a big.Rat takes beyond the first:
// with a long mantissa or a large exponent, SetString multiplies big
// numbers (ratOf bounds both at 1,000).
func numCost(v any) int64 {
	n, ok := v.(fmt.Stringer) // json.Number
	if !ok {
		return 0
	}
	s := n.String()
	cost := int64(len(s))
	if e, ok := exponent(s); ok && e > -maxRatExponent && e < maxRatExponent {
		cost += int64(max(e, -e))
	}
	return cost / 16
}

// maxRegexpInsts bounds a regular expression's program (progSize).
const maxRegexpInsts = 10_000

// MaxRegexpLen bounds the text of a regular expression the library
// parses: parsing a long character class takes about 30 µs a byte.
const MaxRegexpLen = 4096

var errRegexpLong = fmt.Errorf("a regular expression of more than %d bytes is not checked", MaxRegexpLen)

// RegexpSize is about how many instructions the regular expression s
// compiles to (saturating just past 10,000, the most the library
// compiles), what compiling and matching it cost in proportion to. It
// parses s, without compiling it.
func RegexpSize(s string) (int, error) {
	if len(s) > MaxRegexpLen {
		return 0, errRegexpLong
	}
	re, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return 0, err
	}
	return progSize(re), nil
}

// sizedRegexp is a compiled regular expression and its program's size.
type sizedRegexp struct {
	*regexp.Regexp
	insts int
}

// progSize estimates the instructions re compiles to, repetitions
// expanded, saturating past maxRegexpInsts.
func progSize(re *syntax.Regexp) int {
	const limit = maxRegexpInsts + 1
	sum := func(subs []*syntax.Regexp) int {
		n := len(subs)
		for _, s := range subs {
			if n += progSize(s); n > limit {
				return limit
			}
		}
		return n
	}
	switch re.Op {
	case syntax.OpLiteral:
		return max(1, len(re.Rune))
	case syntax.OpCharClass:
		return 1 + len(re.Rune)/8
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return min(limit, 2+sum(re.Sub))
	case syntax.OpRepeat:
		times := re.Max
		if times < 0 {
			times = re.Min + 1
		}
		return min(limit, max(1, times)*(1+sum(re.Sub)))
	case syntax.OpConcat, syntax.OpAlternate:
		return sum(re.Sub)
	}
	return 1
}

// ratCost is the steps an operation with the schema's number r takes
// beyond the first (nil: none).
func ratCost(r *big.Rat) int64 {
	if r == nil {
		return 0
	}
	return int64(r.Num().BitLen()+r.Denom().BitLen()) / 64
}

// exponent is the exponent of the number literal s (0 without one), and
// false when it does not fit an int.
func exponent(s string) (int, bool) {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return 0, true
	}
	e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	return e, err == nil
}
