package adversarial

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

var onlyFamily = flag.String("family", "", "run only the cases of this family")

var runDefects = flag.Bool("defects", false, "also run the cases marked with a known defect, and report which still reproduce")

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

var families = []family{famEscape, famBomb, famFlood, famTools, famSession, famProtocol, famConcurrency, famExecID, famAccounting}

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
func (w want) or(kinds ...ptcv1.ErrorKind) want { w.kinds = append(w.kinds, kinds...); return w }

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
}

// skip records that the case cannot run in this environment.
func (e *env) skip(reason string) { e.skipped = reason }

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

// verdict is the outcome of one case in one mode, for the summary.
type verdict struct {
	family family
	mode   mode
	state  string // pass, skip, fail
}

// tally collects verdicts for the summary.
type tally struct {
	mu sync.Mutex
	v  []verdict
}

func (t *tally) add(f family, m mode, state string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.v = append(t.v, verdict{f, m, state})
}

// summary prints pass/skip/fail counts per family and mode.
func (t *tally) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	type key struct {
		f family
		m mode
	}
	counts := map[key]map[string]int{}
	for _, v := range t.v {
		k := key{v.family, v.mode}
		if counts[k] == nil {
			counts[k] = map[string]int{}
		}
		counts[k][v.state]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-12s %-10s %5s %5s %5s\n", "family", "mode", "pass", "skip", "fail")
	tot := map[string]int{}
	for _, f := range families {
		for _, m := range []mode{worker, inprocess} {
			c := counts[key{f, m}]
			if c == nil {
				continue
			}
			fmt.Fprintf(&b, "%-12s %-10s %5d %5d %5d\n", f, m, c["pass"], c["skip"], c["fail"])
			for s, n := range c {
				tot[s] += n
			}
		}
	}
	fmt.Fprintf(&b, "%-12s %-10s %5d %5d %5d\n", "total", "", tot["pass"], tot["skip"], tot["fail"])
	return b.String()
}

// applies reports whether c runs in mode m.
func (c *tcase) applies(m mode) bool {
	ms := c.modes
	if ms == 0 {
		ms = both
	}
	return ms&m != 0
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

// runCase runs c against srv and returns the problems found (empty when
// the case passes).
func runCase(t *testing.T, c *tcase, srv *server, dir string) (problems []string, skipped string) {
	e := &env{srv: srv, c: srv.rpc(), dir: dir, mark: srv.log.mark()}
	var sampler *rssSampler
	var before int64
	if c.serverGrowth > 0 || c.serverSettle > 0 {
		before, _ = rssOf(srv.pid())
	}
	if c.serverGrowth > 0 {
		sampler = sampleRSS(srv.pid())
	}
	// The client gives the server a little more than the bound, so that
	// an answer just past it is told apart from no answer.
	ctx, cancel := context.WithTimeout(context.Background(), c.bound+5*time.Second)
	start := time.Now()
	var res *ptcv1.ExecuteResponse
	var err error
	if c.do != nil {
		res, err = c.do(ctx, e)
	} else {
		res, err = e.c.Execute(ctx, c.req)
	}
	took := time.Since(start)
	cancel()
	if e.skipped != "" {
		return nil, e.skipped
	}
	t.Logf("answered in %v: %s", took.Round(time.Millisecond), describe(res, err))
	if sampler != nil {
		peak := sampler.stop()
		if grew := peak - before; grew > c.serverGrowth {
			problems = append(problems, fmt.Sprintf("ptcd's RSS grew by %s during the case (from %s to %s), more than the %s allowed",
				mib(grew), mib(before), mib(peak), mib(c.serverGrowth)))
		}
	}
	if took > c.bound {
		problems = append(problems, fmt.Sprintf("answered after %v, beyond the bound of %v", took.Round(time.Millisecond), c.bound))
	}
	problems = append(problems, e.problems...)
	problems = append(problems, c.want.verify(res, err)...)
	if len(problems) == 0 && c.next != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		res, err := e.c.Execute(ctx, c.next)
		cancel()
		for _, p := range c.nextWant.verify(res, err) {
			problems = append(problems, "next execution: "+p)
		}
	}
	if err := srv.alive(e.mark); err != nil {
		return append(problems, err.Error()), ""
	}
	// An execution that overran its bound may still run inside ptcd (an
	// in-process built-in that cannot be stopped): later cases get a fresh
	// server rather than its leftovers. So does every case run for a known
	// defect.
	if took > c.bound || *runDefects && c.defect != "" {
		if err := srv.restart(); err != nil {
			problems = append(problems, "restarting the server: "+err.Error())
		}
		return problems, ""
	}
	if c.serverSettle > 0 {
		var now int64
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			now, _ = rssOf(srv.pid())
			if now <= before+c.serverSettle || time.Now().After(deadline) {
				break
			}
		}
		if now > before+c.serverSettle {
			problems = append(problems, fmt.Sprintf("ptcd's RSS stayed at %s 10s after the case (before it: %s; allowed: +%s)", mib(now), mib(before), mib(c.serverSettle)))
		}
	}
	return problems, ""
}

// verify compares an answer with w, and checks the invariants every
// response must hold.
func (w want) verify(res *ptcv1.ExecuteResponse, err error) []string {
	got := describe(res, err)
	if w.custom {
		if err != nil || res != nil {
			return []string{"unexpected answer: " + got}
		}
		return nil
	}
	if err != nil && w.orCode != codes.OK && status.Code(err) == w.orCode {
		return nil
	}
	if w.code != codes.OK {
		if status.Code(err) != w.code {
			return []string{fmt.Sprintf("want gRPC status %v, got %s", w.code, got)}
		}
		return nil
	}
	if err != nil {
		return []string{fmt.Sprintf("want a response, got %s", got)}
	}
	var problems []string
	if e := res.GetError(); e == nil {
		switch {
		case !w.ok:
			problems = append(problems, fmt.Sprintf("want error kind %s, got %s", kindList(w.kinds), got))
		case len(w.results) > 0 && !slices.Contains(w.results, compact(res.GetResultJson())):
			problems = append(problems, fmt.Sprintf("want result %s, got %s", strings.Join(w.results, " or "), got))
		}
	} else if !slices.Contains(w.kinds, e.GetKind()) {
		wanted := kindList(w.kinds)
		if w.ok {
			wanted = "success"
			if len(w.results) > 0 {
				wanted += " with " + strings.Join(w.results, " or ")
			}
			if len(w.kinds) > 0 {
				wanted += " or " + kindList(w.kinds)
			}
		}
		problems = append(problems, fmt.Sprintf("want %s, got %s", wanted, got))
	}
	if len(problems) == 0 && w.check != nil {
		if err := w.check(res); err != nil {
			problems = append(problems, err.Error()+" (response: "+got+")")
		}
	}
	return append(problems, invariants(res)...)
}

// invariants are what every ExecuteResponse must hold, whatever the
// script did.
func invariants(res *ptcv1.ExecuteResponse) []string {
	var p []string
	if !validExecutionID(res.GetExecutionId()) {
		p = append(p, fmt.Sprintf("execution_id %q breaks the contract's alphabet", clip(res.GetExecutionId(), 200)))
	}
	if e := res.GetError(); e != nil {
		if e.GetKind() == ptcv1.ErrorKind_ERROR_KIND_UNSPECIFIED {
			p = append(p, "an error with kind UNSPECIFIED")
		}
		if res.GetResultJson() != "" {
			p = append(p, "a failed execution with a result_json")
		}
		for _, leak := range goInternals {
			if strings.Contains(res.GetModelMessage(), leak) {
				p = append(p, fmt.Sprintf("model_message shows ptc's internals (%q): %s", leak, clip(res.GetModelMessage(), 300)))
			}
			if strings.Contains(e.GetStack(), leak) {
				p = append(p, fmt.Sprintf("error.stack shows ptc's own stack (%q): %s", leak, clip(e.GetStack(), 300)))
			}
		}
	} else {
		if !json.Valid([]byte(res.GetResultJson())) {
			p = append(p, fmt.Sprintf("result_json is not JSON: %s", clip(res.GetResultJson(), 200)))
		}
		if got := res.GetStats().GetOutputBytes(); got != int64(len(res.GetResultJson())) {
			p = append(p, fmt.Sprintf("stats.output_bytes %d, but result_json holds %d bytes", got, len(res.GetResultJson())))
		}
	}
	l := res.GetEffectiveLimits()
	if l.GetTimeout().AsDuration() <= 0 || l.GetCpuTime().AsDuration() <= 0 || l.GetMemoryBytes() <= 0 || l.GetMaxToolCalls() <= 0 ||
		l.GetMaxConcurrentToolCalls() <= 0 || l.GetMaxOutputBytes() <= 0 || l.GetMaxLogBytes() <= 0 {
		p = append(p, fmt.Sprintf("effective_limits not fully set: %v", l))
	}
	var logBytes int64
	for _, e := range res.GetLogs() {
		logBytes += int64(len(e.GetMessage()))
	}
	if max := l.GetMaxLogBytes(); max > 0 && logBytes > max {
		p = append(p, fmt.Sprintf("logs hold %d bytes, more than max_log_bytes %d", logBytes, max))
	}
	if max := l.GetMaxOutputBytes(); max > 0 && int64(len(res.GetResultJson())) > max {
		p = append(p, fmt.Sprintf("result_json holds %d bytes, more than max_output_bytes %d", len(res.GetResultJson()), max))
	}
	for i, r := range res.GetTrace() {
		if r.GetSeq() != int32(i+1) {
			p = append(p, fmt.Sprintf("trace[%d] has seq %d", i, r.GetSeq()))
			break
		}
	}
	return p
}

// goInternals are strings that betray ptc's Go implementation.
var goInternals = []string{"goroutine ", ".go:", "github.com/", "runtime/debug", "/usr/local/go"}

// validExecutionID is the contract's rule for execution ids.
func validExecutionID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r)) {
			return false
		}
	}
	return true
}

// describe summarises an answer for a failure message.
func describe(res *ptcv1.ExecuteResponse, err error) string {
	if err != nil {
		st := status.Convert(err)
		return fmt.Sprintf("gRPC %v: %s", st.Code(), clip(st.Message(), 300))
	}
	return brief(res)
}

// brief summarises a response.
func brief(res *ptcv1.ExecuteResponse) string {
	if res == nil {
		return "no response"
	}
	if e := res.GetError(); e != nil {
		return fmt.Sprintf("%v: %s (%d logs, %d trace records, %d tool calls)", e.GetKind(), clip(e.GetMessage(), 300),
			len(res.GetLogs()), len(res.GetTrace()), res.GetStats().GetToolCalls())
	}
	return fmt.Sprintf("result %s (%d logs, %d trace records, %d tool calls)", clip(res.GetResultJson(), 300),
		len(res.GetLogs()), len(res.GetTrace()), res.GetStats().GetToolCalls())
}

func kindList(ks []ptcv1.ErrorKind) string {
	var s []string
	for _, k := range ks {
		s = append(s, strings.TrimPrefix(k.String(), "ERROR_KIND_"))
	}
	return strings.Join(s, " or ")
}

// clip shortens s for messages.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// compact returns JSON text without insignificant space.
func compact(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}

// TestMain builds ptcd once for every test of the package.
func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "ptc-adversarial-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ptcdBinary, err = buildPtcd(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestAdversarial runs every case in each mode against its own ptcd, the
// two modes side by side, and logs a summary per family and mode.
func TestAdversarial(t *testing.T) {
	cases := allCases()
	var tl tally
	t.Cleanup(func() { t.Log("adversarial suite:" + tl.summary()) })
	for _, m := range []mode{worker, inprocess} {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, m)
			dir := t.TempDir()
			for i := range cases {
				c := &cases[i]
				if !c.applies(m) || !fullSuite && !c.fast || *onlyFamily != "" && string(c.family) != *onlyFamily {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					d := c.defectIn(m)
					if d != "" && !*runDefects {
						tl.add(c.family, m, "skip")
						t.Skipf("KNOWN DEFECT, case skipped: %s", d)
					}
					problems, skipped := runCase(t, c, srv, dir)
					switch {
					case skipped != "":
						tl.add(c.family, m, "skip")
						t.Skipf("cannot run here: %s", skipped)
					case d != "" && len(problems) == 0:
						tl.add(c.family, m, "fail")
						t.Errorf("the defect %q no longer reproduces: remove the case's defect note", d)
					case d != "":
						tl.add(c.family, m, "skip")
						t.Skipf("KNOWN DEFECT still reproduces: %s\n\t%s", d, strings.Join(problems, "\n\t"))
					case len(problems) > 0:
						tl.add(c.family, m, "fail")
						t.Errorf("[%s] %s", c.family, strings.Join(problems, "\n\t"))
					default:
						tl.add(c.family, m, "pass")
					}
				})
			}
		})
	}
}

// TestCaseTable checks the table itself — unique names, a family, a
// bound and an attack per case, at least 120 cases, and a fast case of
// every family in each mode — and logs how many cases each family has.
func TestCaseTable(t *testing.T) {
	cases := allCases()
	checkCases(t, cases)
	if len(cases) < 120 {
		t.Errorf("%d cases, want at least 120", len(cases))
	}
	type key struct {
		f family
		m mode
	}
	all, fast, defects := map[key]int{}, map[key]int{}, map[key]int{}
	for _, c := range cases {
		for _, m := range []mode{worker, inprocess} {
			if !c.applies(m) {
				continue
			}
			k := key{c.family, m}
			all[k]++
			if c.fast {
				fast[k]++
			}
			if c.defectIn(m) != "" {
				defects[k]++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d cases\n%-12s %-10s %5s %5s %7s\n", len(cases), "family", "mode", "cases", "fast", "defect")
	for _, f := range families {
		for _, m := range []mode{worker, inprocess} {
			k := key{f, m}
			fmt.Fprintf(&b, "%-12s %-10s %5d %5d %7d\n", f, m, all[k], fast[k], defects[k])
			if fast[k] == 0 {
				t.Errorf("family %s has no fast case in %s mode", f, m)
			}
		}
	}
	t.Log("case table:\n" + b.String())
	// The known defects, each with the cases (and modes) that show it.
	var order []string
	byDefect := map[string][]string{}
	for _, c := range cases {
		var ms []string
		d := ""
		for _, m := range []mode{worker, inprocess} {
			if c.applies(m) && c.defectIn(m) != "" {
				ms = append(ms, m.String())
				d = c.defectIn(m)
			}
		}
		if d == "" {
			continue
		}
		if byDefect[d] == nil {
			order = append(order, d)
		}
		byDefect[d] = append(byDefect[d], c.name+" ("+strings.Join(ms, ", ")+")")
	}
	b.Reset()
	for i, d := range order {
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, d, strings.Join(byDefect[d], ", "))
	}
	t.Logf("%d known defects:\n%s", len(order), b.String())
}

// checkCases checks the table itself: unique names, a family, a bound,
// an attack.
func checkCases(t *testing.T, cases []tcase) {
	seen := map[string]bool{}
	for _, c := range cases {
		switch {
		case seen[c.name]:
			t.Fatalf("case %q twice", c.name)
		case c.family == "" || c.bound <= 0 || (c.req == nil && c.do == nil):
			t.Fatalf("case %q lacks a family, a bound or an attack", c.name)
		case c.want.code == codes.OK && !c.want.ok && len(c.want.kinds) == 0 && !c.want.custom:
			t.Fatalf("case %q expects nothing", c.name)
		}
		seen[c.name] = true
	}
}
