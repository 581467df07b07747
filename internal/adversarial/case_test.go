package adversarial

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// mode is how ptcd runs executions.
type mode int

const (
	worker    mode = 1 << iota // workers.mode: worker (the default)
	inprocess                  // workers.mode: inprocess
	both      = worker | inprocess
)

func (m mode) String() string {
	switch m {
	case worker:
		return "worker"
	case inprocess:
		return "inprocess"
	}
	return "both"
}

// family groups cases by the kind of attack.
type family string

const (
	famEscape      family = "escape"      // escapes and host access
	famBomb        family = "bomb"        // resource bombs
	famFlood       family = "flood"       // log, output and call floods
	famTools       family = "tools"       // hostile tool arguments and names
	famSession     family = "session"     // hostile Session clients
	famProtocol    family = "protocol"    // protocol abuse, WASM included
	famConcurrency family = "concurrency" // many bombs at once
	famExecID      family = "execid"      // execution_id abuse
	famAccounting  family = "accounting"  // stats and trace
)

var families = []family{famEscape, famBomb, famFlood, famTools, famSession, famProtocol, famConcurrency, famExecID, famAccounting,
	famJSONConv, famApprovals, famWrapper, famTransport, famExhaustion, famModuleBomb, famPython}

// tcase is one adversarial case.
type tcase struct {
	name   string
	family family
	modes  mode // zero: both
	fast   bool // part of the subset plain `go test` runs

	// The attack: req is sent with Execute; do, when set, replaces it
	// (Session conversations, raw messages, several requests).
	req *ptcv1.ExecuteRequest
	do  func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error)

	want  want
	bound time.Duration // the whole attack must be answered within it

	// next, when set, runs after the attack on the same server and must
	// answer nextWant: what one execution leaves behind must not be seen
	// by the next.
	next     *ptcv1.ExecuteRequest
	nextWant want

	// serverGrowth, when set, bounds how much ptcd's RSS may grow above
	// its level before the case while the case runs.
	serverGrowth int64

	// serverSettle, when set, bounds how far above its level before the
	// case ptcd's RSS may stay once the case is over (within 10s): what
	// one execution needed must be given back.
	serverSettle int64

	// defect names a known defect that makes the case fail today; the
	// case is skipped until it is fixed. defectModes restricts it to some
	// modes (zero: every mode of the case).
	defect      string
	defectModes mode

	// residual names a risk that is inherent to a mode — in-process mode
	// is not a sandbox — and is documented as such in docs/security.md
	// (TestResidualsDocumented checks it); the case does not run in
	// residualModes unless -residuals is given.
	residual      string
	residualModes mode
}

// want is the expected answer.
type want struct {
	custom  bool              // the case's do function checks everything itself
	code    codes.Code        // the RPC's status (OK: it succeeds)
	ok      bool              // a successful execution is accepted
	results []string          // with ok: the accepted results (compact JSON); none: any
	kinds   []ptcv1.ErrorKind // accepted error kinds
	orCode  codes.Code        // also accepted: the RPC fails with this code
	check   func(*ptcv1.ExecuteResponse) error
}

// succeeds expects success with one of results (any result when none).
func succeeds(results ...string) want { return want{ok: true, results: results} }

// fails expects a failed execution of one of kinds.
func fails(kinds ...ptcv1.ErrorKind) want { return want{kinds: kinds} }

// checkedByDo: the do function records its own problems (an RPC other
// than Execute) and returns no response.
var checkedByDo = want{custom: true}

// refused expects the RPC to fail with code.
func refused(code codes.Code) want { return want{code: code} }

// or also accepts a failed execution of kinds.
func (w want) or(kinds ...ptcv1.ErrorKind) want {
	w.kinds = append(slices.Clip(w.kinds), kinds...)
	return w
}

// orRefused also accepts the RPC failing with code.
func (w want) orRefused(code codes.Code) want { w.orCode = code; return w }

// and adds a condition on the response.
func (w want) and(check func(*ptcv1.ExecuteResponse) error) want {
	prev := w.check
	w.check = func(r *ptcv1.ExecuteResponse) error {
		if prev != nil {
			if err := prev(r); err != nil {
				return err
			}
		}
		return check(r)
	}
	return w
}

// env is what a case's do function may use.
type env struct {
	srv  *server
	c    ptcv1.RunnerServiceClient
	dir  string // a directory of the test process, for host-access probes
	mark int64  // the server's log position at the start of the case

	problems []string // what do found wrong beyond the response
	skipped  string   // why do could not attack here (a tool is missing)
	notes    []string // what do measured, for the log
}

// skip records that the case cannot run in this environment.
func (e *env) skip(reason string) { e.skipped = reason }

// note records a measurement of a case's do function; the run logs it.
func (e *env) note(format string, args ...any) {
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
}

// fail records a problem found by a case's do function.
func (e *env) fail(format string, args ...any) {
	e.problems = append(e.problems, fmt.Sprintf(format, args...))
}

const (
	SyntaxError     = ptcv1.ErrorKind_ERROR_KIND_SYNTAX_ERROR
	ScriptError     = ptcv1.ErrorKind_ERROR_KIND_SCRIPT_ERROR
	Timeout         = ptcv1.ErrorKind_ERROR_KIND_TIMEOUT
	CPULimit        = ptcv1.ErrorKind_ERROR_KIND_CPU_LIMIT
	MemoryLimit     = ptcv1.ErrorKind_ERROR_KIND_MEMORY_LIMIT
	ToolCallLimit   = ptcv1.ErrorKind_ERROR_KIND_TOOL_CALL_LIMIT
	OutputLimit     = ptcv1.ErrorKind_ERROR_KIND_OUTPUT_LIMIT
	SchemaViolation = ptcv1.ErrorKind_ERROR_KIND_RESULT_SCHEMA_VIOLATION
	Cancelled       = ptcv1.ErrorKind_ERROR_KIND_CANCELLED
	Internal        = ptcv1.ErrorKind_ERROR_KIND_INTERNAL
)

// applies reports whether c runs in mode m.
func (c *tcase) applies(m mode) bool {
	ms := c.modes
	if ms == 0 {
		ms = both
	}
	return ms&m != 0
}

// residualIn returns the documented residual risk of c in mode m, if any.
func (c *tcase) residualIn(m mode) string {
	if c.residualModes&m == 0 {
		return ""
	}
	return c.residual
}

// defectIn returns the defect that affects c in mode m, if any.
func (c *tcase) defectIn(m mode) string {
	if c.defect == "" {
		return ""
	}
	if c.defectModes != 0 && c.defectModes&m == 0 {
		return ""
	}
	return c.defect
}
