// Package ptctest tests ptc scripts from Go tests: fake tools with canned
// answers (Static, Sequence, Fail, matched on argument subsets), a runner
// helper (Run) that executes a script deterministically against fakes,
// real tools or the demo tools, assertions on the result and the tool
// call trace (AssertResult, AssertError, AssertCalls, AssertCall), and
// record/replay of cassettes (WithRecord, Replay).
//
//	func TestOverBudget(t *testing.T) {
//		res := ptctest.Run(t, script,
//			ptctest.WithFakes(
//				ptctest.Static("get_team_members", team),
//				ptctest.Sequence("get_expenses", q1, ptctest.Fail("rate_limited", "slow down")),
//			))
//		ptctest.AssertCalls(t, res, "get_team_members", "get_expenses", "get_expenses")
//		ptctest.AssertResult(t, res, want)
//	}
//
// Every run is deterministic (seeded Math.random, virtual clock) and keeps
// tool results in the trace. The helpers take a testing.TB and use only
// its Helper, Errorf and Fatalf methods.
package ptctest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/cassette"
	"github.com/ptcrun/ptc/internal/cassette/fixture"
	"github.com/ptcrun/ptc/internal/plural"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// What makes every run of Run reproducible.
const (
	// DefaultSeed seeds Math.random unless a WithRequest option sets
	// Request.Seed.
	DefaultSeed = 1
	// ExecutionID is the execution id of runs made by Run (tool
	// idempotency keys are "ptctest/<seq>").
	ExecutionID = "ptctest"
)

// Answer is one canned response of a fake tool: an output or an error.
type Answer struct {
	a   fixture.Answer
	err error
}

// output returns an answer with output v, marshalled as JSON (a
// json.RawMessage is used as it is).
func output(v any) Answer {
	b, err := toJSON(v)
	return Answer{a: fixture.Answer{Output: b}, err: err}
}

// Fail returns an answer that fails the call with a tool error: the script
// sees err.code == code and err.message == message.
func Fail(code, message string) Answer {
	return Answer{a: fixture.Answer{Error: &tools.Error{Code: code, Message: message}}}
}

func answerOf(v any) Answer {
	if a, ok := v.(Answer); ok {
		return a
	}
	return output(v)
}

func toJSON(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return nil, errors.New("json.RawMessage is not valid JSON")
		}
		return raw, nil
	}
	return json.Marshal(v)
}

// Fake is a fake tool: a definition and rules that answer its calls. A
// Fake may be passed to several runs; each run starts its ordered answers
// from the first.
type Fake struct {
	name     string
	def      *tools.Definition
	rules    []fixture.Rule // When rules first, then the default
	fallback *fixture.Rule
	err      error
}

// Static returns a fake tool that gives every call the same answer:
// output marshalled as JSON, or an Answer (e.g. Fail) as it is.
func Static(name string, output any) *Fake {
	a := answerOf(output)
	return &Fake{name: name, fallback: &fixture.Rule{Answers: []fixture.Answer{a.a}, Repeat: true}, err: a.err}
}

// Sequence returns a fake tool whose n-th call gets the n-th answer
// (values marshalled as JSON, or Answers such as Fail); calls past the end
// fail with code "fixture_exhausted".
func Sequence(name string, answers ...any) *Fake {
	f := &Fake{name: name, fallback: &fixture.Rule{}}
	for _, v := range answers {
		a := answerOf(v)
		f.fallback.Answers = append(f.fallback.Answers, a.a)
		f.err = errors.Join(f.err, a.err)
	}
	if len(answers) == 0 {
		f.err = errors.Join(f.err, fmt.Errorf("ptctest.Sequence(%q) has no answers", name))
	}
	return f
}

// When adds a rule tried before the fake's default answer (and before
// rules added later): calls whose arguments contain match (a subset: the
// keys given must be present with the values given, recursively) get
// answer. It returns f.
func (f *Fake) When(match any, answer any) *Fake {
	m, err := toJSON(match)
	a := answerOf(answer)
	f.rules = append(f.rules, fixture.Rule{Match: m, Answers: []fixture.Answer{a.a}, Repeat: true})
	f.err = errors.Join(f.err, err, a.err)
	return f
}

// Define sets the fake's definition (its Name is ignored). Without it a
// fake named like a demo tool takes that tool's definition, and any other
// fake accepts any JSON object and checks no output schema.
func (f *Fake) Define(d tools.Definition) *Fake {
	d.Name = f.name
	f.def = &d
	return f
}

// Name returns the tool name.
func (f *Fake) Name() string { return f.name }

// Tool returns the fake as a tools.Tool with fresh answer counters, for use
// with a ptc.Runner of your own.
func (f *Fake) Tool() (tools.Tool, error) {
	if f.err != nil {
		return tools.Tool{}, fmt.Errorf("fake %s: %w", f.name, f.err)
	}
	rules := append([]fixture.Rule(nil), f.rules...)
	if f.fallback != nil {
		rules = append(rules, *f.fallback)
	}
	h, err := fixture.New(f.name, rules...)
	if err != nil {
		return tools.Tool{}, err
	}
	def := tools.Definition{Name: f.name}
	if f.def != nil {
		def = *f.def
	} else {
		for _, t := range demo.Tools() {
			if t.Name == f.name {
				def = t.Definition
			}
		}
	}
	return tools.Tool{Definition: def, Handler: h.Handle}, nil
}

// Option configures Run and Replay. The options are collected before
// the run, so their order does not matter: tools, fakes, request edits
// and runner options add up (edits run in the order given), and an option
// that sets one value (WithInput, WithLimits, WithRecord, WithScript)
// given twice with different values fails the test, naming it.
type Option interface {
	apply(*config) error
}

// optionFunc is an Option that records what it sets.
type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// setOnce records v in *dst, refusing a second, different value.
func setOnce[T any](name string, dst **T, v T) error {
	if *dst != nil && !reflect.DeepEqual(**dst, v) {
		return fmt.Errorf("%s given twice with different values: give it once", name)
	}
	*dst = &v
	return nil
}

type config struct {
	input      *any
	fakes      []*Fake
	tools      []tools.Tool
	demo       bool
	limits     *ptc.Limits
	edit       []func(*ptc.Request)
	runnerOpts []ptc.Option
	record     *string
	script     *string
	ctx        context.Context
}

// WithInput sets the script's input: v marshalled as JSON (a
// json.RawMessage is used as it is).
func WithInput(v any) Option {
	return optionFunc(func(c *config) error { return setOnce("WithInput", &c.input, v) })
}

// WithFakes adds fake tools; a fake replaces a tool of the same name.
func WithFakes(fakes ...*Fake) Option {
	return optionFunc(func(c *config) error { c.fakes = append(c.fakes, fakes...); return nil })
}

// WithTools adds real tools.
func WithTools(tools ...tools.Tool) Option {
	return optionFunc(func(c *config) error { c.tools = append(c.tools, tools...); return nil })
}

// WithDemoTools adds the demo tools (package tools/demo).
func WithDemoTools() Option { return optionFunc(func(c *config) error { c.demo = true; return nil }) }

// WithLimits sets the requested limits.
func WithLimits(l ptc.Limits) Option {
	return optionFunc(func(c *config) error { return setOnce("WithLimits", &c.limits, l) })
}

// WithRequest edits the request just before it runs.
func WithRequest(edit func(*ptc.Request)) Option {
	return optionFunc(func(c *config) error { c.edit = append(c.edit, edit); return nil })
}

// WithRunnerOptions passes options to ptc.NewRunner after the tools (for
// instance engines for more languages).
func WithRunnerOptions(opts ...ptc.Option) Option {
	return optionFunc(func(c *config) error { c.runnerOpts = append(c.runnerOpts, opts...); return nil })
}

// WithRecord writes a cassette of the run to path (see Replay).
func WithRecord(path string) Option {
	return optionFunc(func(c *config) error { return setOnce("WithRecord", &c.record, path) })
}

// WithScript replaces the recorded script in Replay.
func WithScript(source string) Option {
	return optionFunc(func(c *config) error { return setOnce("WithScript", &c.script, source) })
}

// newConfig collects opts. A run is bounded by its limits (WithLimits),
// not by a context.
func newConfig(opts []Option) (*config, error) {
	c := &config{ctx: context.Background()}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run executes script (JavaScript unless a WithRequest option says
// otherwise) deterministically against the tools the options give, and
// returns the result; a script failure is in res.Error, not a test
// failure. A request the runner refuses, or a fake that cannot be built,
// fails the test with Fatalf.
func Run(t testing.TB, script string, opts ...Option) *ptc.Result {
	t.Helper()
	c, err := newConfig(opts)
	if err != nil {
		t.Fatalf("ptctest: %v", err)
	}
	toolset, err := c.toolset()
	if err != nil {
		t.Fatalf("ptctest: %v", err)
	}
	req := ptc.Request{ExecutionID: ExecutionID, Source: script,
		Deterministic: true, Seed: DefaultSeed, IncludeToolResults: true}
	if err := c.applyTo(&req); err != nil {
		t.Fatalf("ptctest: %v", err)
	}
	res := execute(t, c, req, toolset)
	if c.record != nil {
		var defs []tools.Definition
		for _, tl := range toolset {
			defs = append(defs, tl.Definition)
		}
		if err := record(*c.record, req, defs, res); err != nil {
			t.Fatalf("ptctest: record %s: %v", *c.record, err)
		}
	}
	return res
}

func (c *config) toolset() ([]tools.Tool, error) {
	var out []tools.Tool
	idx := map[string]int{}
	add := func(t tools.Tool) {
		if i, ok := idx[t.Name]; ok {
			out[i] = t
			return
		}
		idx[t.Name] = len(out)
		out = append(out, t)
	}
	if c.demo {
		for _, t := range demo.Tools() {
			add(t)
		}
	}
	for _, t := range c.tools {
		add(t)
	}
	for _, f := range c.fakes {
		t, err := f.Tool()
		if err != nil {
			return nil, err
		}
		add(t)
	}
	return out, nil
}

// applyTo sets the input, limits and edits of the options on req.
func (c *config) applyTo(req *ptc.Request) error {
	if c.input != nil {
		in, err := toJSON(*c.input)
		if err != nil {
			return fmt.Errorf("input: %w", err)
		}
		req.Input = in
	}
	if c.limits != nil && *c.limits != (ptc.Limits{}) {
		req.Limits = *c.limits
	}
	for _, e := range c.edit {
		e(req)
	}
	return nil
}

func execute(t testing.TB, c *config, req ptc.Request, toolset []tools.Tool) *ptc.Result {
	t.Helper()
	r, err := ptc.NewRunner(append([]ptc.Option{ptc.WithTools(toolset...)}, c.runnerOpts...)...)
	if err != nil {
		t.Fatalf("ptctest: tools: %v", err)
	}
	res, err := r.Execute(c.ctx, req)
	if err != nil {
		t.Fatalf("ptctest: the request was refused: %v", err)
	}
	return res
}

func record(path string, req ptc.Request, defs []tools.Definition, res *ptc.Result) error {
	c, err := cassette.New(req, defs, "", res)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := c.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Replay runs the cassette at path with every tool call answered from the
// recording (no tool is called), and reports a divergence from the
// recording — a call with other arguments, an extra or missing call, or
// another result — with Errorf. The recorded script, input and seed are
// used unless WithScript, WithInput or WithRequest (Request.Seed, say)
// override them.
func Replay(t testing.TB, path string, opts ...Option) *ptc.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("ptctest: %v", err)
	}
	tape, err := cassette.Read(f)
	f.Close()
	if err != nil {
		t.Fatalf("ptctest: cassette %s: %v", path, err)
	}
	req, err := tape.Replay()
	if err != nil {
		t.Fatalf("ptctest: cassette %s: %v", path, err)
	}
	c, err := newConfig(opts)
	if err != nil {
		t.Fatalf("ptctest: %v", err)
	}
	if c.script != nil {
		req.Source = *c.script
	}
	if err := c.applyTo(&req); err != nil {
		t.Fatalf("ptctest: %v", err)
	}
	rp := cassette.NewReplayer(tape)
	rp.Observe(&req)
	res := execute(t, c, req, rp.Tools())
	if d := rp.Check(res); d != nil {
		t.Errorf("ptctest: %s: %v", path, d)
	}
	return res
}

// AssertResult checks that the script succeeded with the JSON value want
// (marshalled; a json.RawMessage is used as it is), comparing JSON values,
// not bytes. It reports a failure with a diff and returns false.
func AssertResult(t testing.TB, res *ptc.Result, want any) bool {
	t.Helper()
	if res.Error != nil {
		t.Errorf("ptctest: the script failed: %s", describe(res.Error))
		return false
	}
	w, err := toJSON(want)
	if err != nil {
		t.Errorf("ptctest: AssertResult: want: %v", err)
		return false
	}
	if cassette.Equal(w, res.Result) {
		return true
	}
	t.Errorf("ptctest: the result differs (want → got):\n  %s\n  got: %s",
		strings.Join(cassette.Diff(w, res.Result, 10), "\n  "), cassette.Compact(res.Result, 400))
	return false
}

// AssertError checks that the script failed with kind and, unless substr
// is empty, a message containing substr.
func AssertError(t testing.TB, res *ptc.Result, kind ptc.ErrorKind, substr string) bool {
	t.Helper()
	switch {
	case res.Error == nil:
		t.Errorf("ptctest: want %s, but the script succeeded with %s", kind, cassette.Compact(res.Result, 200))
	case res.Error.Kind != kind:
		t.Errorf("ptctest: want %s, got %s", kind, describe(res.Error))
	case !strings.Contains(res.Error.Message, substr):
		t.Errorf("ptctest: the %s message does not contain %q: %s", kind, substr, res.Error.Message)
	default:
		return true
	}
	return false
}

// AssertCalls checks that the trace holds exactly calls to the named
// tools, in call (seq) order.
func AssertCalls(t testing.TB, res *ptc.Result, tools ...string) bool {
	t.Helper()
	got := make([]string, 0, len(res.Trace))
	for _, r := range res.Trace {
		got = append(got, r.Tool)
	}
	if strings.Join(got, ",") == strings.Join(tools, ",") {
		return true
	}
	t.Errorf("ptctest: the tool calls differ:\n  want: [%s]\n  got:  [%s]", strings.Join(tools, ", "), strings.Join(got, ", "))
	return false
}

// AssertCall checks that call number seq (1-based) went to tool with
// arguments containing args (a subset, as in Fake.When; nil matches any).
func AssertCall(t testing.TB, res *ptc.Result, seq int, tool string, args any) bool {
	t.Helper()
	if seq < 1 || seq > len(res.Trace) {
		t.Errorf("ptctest: want call #%d to %s, but the script made %s", seq, tool, plural.Count(len(res.Trace), "call", "calls"))
		return false
	}
	r := res.Trace[seq-1]
	if r.Tool != tool {
		t.Errorf("ptctest: call #%d went to %s, want %s", seq, r.Tool, tool)
		return false
	}
	if args == nil {
		return true
	}
	want, err := toJSON(args)
	if err != nil {
		t.Errorf("ptctest: AssertCall: args: %v", err)
		return false
	}
	if !cassette.Contains(r.Arguments, want) {
		t.Errorf("ptctest: call #%d (%s): the arguments %s do not contain %s", seq, tool,
			cassette.Compact(r.Arguments, 300), cassette.Compact(want, 300))
		return false
	}
	return true
}

func describe(e *ptc.ExecutionError) string {
	s := e.Kind.String()
	if e.Line > 0 {
		s += fmt.Sprintf(" at line %d:%d", e.Line, e.Column)
	}
	return s + ": " + e.Message
}
