package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/cassette"
	"github.com/ptcrun/ptc/internal/cassette/fixture"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// DefaultSeed seeds Math.random in cases that give no seed. Cases always
// run deterministically (virtual clock from the Unix epoch).
const DefaultSeed = 1

// Config configures Run.
type Config struct {
	// Parallel bounds the cases running at once; 0 means GOMAXPROCS.
	Parallel int
	// Filter, when set, runs only the cases whose name it matches.
	Filter *regexp.Regexp
	// Update rewrites the expected result of cases whose script succeeded
	// (expect.result in the case file, or the expect.result_file).
	Update bool
	// RunnerOptions are passed to every case's ptc.NewRunner after its
	// tools (e.g. engines for more languages).
	RunnerOptions []ptc.Option
}

// Outcome is the result of one case.
type Outcome struct {
	Case *Case
	// Passed reports that every expectation held.
	Passed bool
	// Failure says why the case failed (several lines at most).
	Failure string
	// Updated reports that --update rewrote the case's expectation.
	Updated bool
	// Duration is the case's wall time.
	Duration time.Duration
}

// Run runs the cases (those Filter matches) in parallel and returns their
// outcomes in the order of cases.
func Run(ctx context.Context, cases []*Case, cfg Config) []Outcome {
	var sel []*Case
	for _, c := range cases {
		if cfg.Filter == nil || cfg.Filter.MatchString(c.Name) {
			sel = append(sel, c)
		}
	}
	n := cfg.Parallel
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	out := make([]Outcome, len(sel))
	// Workers take case indexes from next; each ends when next is closed
	// and drained. Run waits for all of them.
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(n, len(sel)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = runOne(ctx, sel[i], cfg)
			}
		}()
	}
	for i := range sel {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func runOne(ctx context.Context, c *Case, cfg Config) (o Outcome) {
	start := time.Now()
	o.Case = c
	defer func() {
		if p := recover(); p != nil {
			o.Passed, o.Failure = false, fmt.Sprintf("internal error while running the case: %v", p)
		}
		o.Duration = time.Since(start)
	}()
	if c.err != nil {
		o.Failure = c.err.Error()
		return o
	}
	fail, updated := c.run(ctx, cfg)
	o.Passed, o.Failure, o.Updated = fail == "", fail, updated
	return o
}

// run runs one case and returns why it failed ("" when it passed).
func (c *Case) run(ctx context.Context, cfg Config) (failure string, updated bool) {
	req, toolset, replay, err := c.prepare()
	if err != nil {
		return err.Error(), false
	}
	opts := append([]ptc.Option{ptc.WithTools(toolset...)}, cfg.RunnerOptions...)
	var res *ptc.Result
	if c.spec.resumable() {
		if err := c.resumableRequest(&req); err != nil {
			return err.Error(), false
		}
		var fail string
		if res, fail = c.runResumable(ctx, req, opts); fail != "" {
			return fail, false
		}
	} else {
		r, err := ptc.NewRunner(opts...)
		if err != nil {
			return fmt.Sprintf("%s: the tools cannot be set up: %v", c.File, err), false
		}
		defer r.Close()
		if res, err = r.Execute(ctx, req); err != nil {
			return fmt.Sprintf("the request was rejected: %v", err), false
		}
	}
	var fails []string
	if replay != nil {
		d := cassette.Compare(replay, res)
		switch {
		case d == nil:
		case d.Reason != cassette.ReasonResult:
			// Later failures follow from the divergence: report it alone.
			return d.Error(), false
		case !c.spec.Expect.any():
			fails = append(fails, d.Error())
		}
	}
	f, updated := c.checkExpect(res, cfg.Update, replay != nil)
	return strings.Join(append(fails, f...), "\n"), updated
}

// prepare builds the request and the tools of the case.
func (c *Case) prepare() (ptc.Request, []tools.Tool, *cassette.Cassette, error) {
	s := &c.spec
	var req ptc.Request
	var toolset []tools.Tool
	var tape *cassette.Cassette
	if s.Cassette != "" {
		f, err := os.Open(c.path(s.Cassette))
		if err != nil {
			return req, nil, nil, fmt.Errorf("%s: cassette: %v", c.File, err)
		}
		tape, err = cassette.Read(f)
		f.Close()
		if err != nil {
			return req, nil, nil, fmt.Errorf("%s: cassette %s: %v", c.File, s.Cassette, err)
		}
		if req, err = tape.Replay(); err != nil {
			return req, nil, nil, fmt.Errorf("%s: cassette %s: %v", c.File, s.Cassette, err)
		}
		rp := cassette.NewReplayer(tape)
		rp.Observe(&req)
		toolset = rp.Tools()
	} else {
		req = ptc.Request{ExecutionID: "test", Deterministic: true, Seed: DefaultSeed}
		var err error
		if toolset, err = c.tools(); err != nil {
			return req, nil, nil, err
		}
	}
	if s.Seed != 0 {
		req.Seed = s.Seed
	}
	if err := c.script(&req); err != nil {
		return req, nil, nil, err
	}
	in, err := c.jsonOf("input", &s.Input)
	if err != nil {
		return req, nil, nil, err
	}
	if in != nil {
		req.Input = in
	}
	// The case's limits override the recorded ones field by field.
	lim := limits.Limits(req.Limits)
	for _, f := range limits.Fields() {
		if v := f.Get(s.Limits); v != 0 {
			f.Set(&lim, v)
		}
	}
	req.Limits = ptc.Limits(lim)
	return req, toolset, tape, nil
}

// script sets the request's source from the case (a cassette's recorded
// script stays when the case gives none).
func (c *Case) script(req *ptc.Request) error {
	s := &c.spec
	switch {
	case s.Source != "":
		req.Source = s.Source
		req.Language = ptc.LanguageJavaScript
	case s.Script != "":
		b, err := os.ReadFile(c.path(s.Script))
		if err != nil {
			return fmt.Errorf("%s: script: %v", c.File, err)
		}
		req.Source = string(b)
		req.Language = ptc.LanguageJavaScript
		switch strings.ToLower(filepath.Ext(s.Script)) {
		case ".ts", ".mts":
			req.Language = ptc.LanguageTypeScript
		case ".py":
			req.Language = ptc.LanguagePython
		}
	default:
		return nil
	}
	switch s.Language {
	case "javascript":
		req.Language = ptc.LanguageJavaScript
	case "typescript":
		req.Language = ptc.LanguageTypeScript
	case "python":
		req.Language = ptc.LanguagePython
	}
	return nil
}

// tools builds the case's tools: the demo tools (unless demo_tools is
// false), inline definitions, and fixtures replacing handlers.
func (c *Case) tools() ([]tools.Tool, error) {
	s := &c.spec
	byName := map[string]*tools.Tool{}
	var order []string
	if s.DemoTools == nil || *s.DemoTools {
		for _, t := range demo.Tools() {
			byName[t.Name] = &t
			order = append(order, t.Name)
		}
	}
	for i, d := range s.Definitions {
		field := fmt.Sprintf("definitions[%d]", i)
		if err := tools.ValidateName(d.Name); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", c.File, field, err)
		}
		in, err := c.jsonOf(field+".input_schema", &d.InputSchema)
		if err != nil {
			return nil, err
		}
		out, err := c.jsonOf(field+".output_schema", &d.OutputSchema)
		if err != nil {
			return nil, err
		}
		def := tools.Definition{Name: d.Name, Description: d.Description, InputSchema: in, OutputSchema: out}
		if t, ok := byName[d.Name]; ok {
			t.Definition, t.TrustOutput = def, false
			continue
		}
		byName[d.Name] = &tools.Tool{Definition: def, Handler: noFixture(d.Name)}
		order = append(order, d.Name)
	}
	for name, rs := range s.Fixtures {
		t, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("%s: fixtures.%s: tool %s has no definition: add it under definitions (demo tools are defined already)", c.File, name, name)
		}
		fr, err := c.rules(name, rs)
		if err != nil {
			return nil, err
		}
		f, err := fixture.New(name, fr...)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", c.File, err)
		}
		t.Handler, t.TrustOutput = f.Handle, false
	}
	out := make([]tools.Tool, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out, nil
}

func noFixture(name string) tools.Handler {
	f, _ := fixture.New(name)
	return f.Handle
}

func (c *Case) rules(name string, rs rules) ([]fixture.Rule, error) {
	var out []fixture.Rule
	for i, r := range rs {
		field := fmt.Sprintf("fixtures.%s[%d]", name, i)
		m, err := c.jsonOf(field+".match", &r.Match)
		if err != nil {
			return nil, err
		}
		fr := fixture.Rule{Match: m}
		switch {
		case r.Sequence != nil:
			for j, a := range r.Sequence {
				ans, err := c.answer(fmt.Sprintf("%s.sequence[%d]", field, j), a.Output, a.Error)
				if err != nil {
					return nil, err
				}
				fr.Answers = append(fr.Answers, ans)
			}
		default:
			ans, err := c.answer(field, r.Output, r.Error)
			if err != nil {
				return nil, err
			}
			fr.Answers, fr.Repeat = []fixture.Answer{ans}, true
		}
		out = append(out, fr)
	}
	return out, nil
}

func (c *Case) answer(field string, output yaml.Node, e *toolError) (fixture.Answer, error) {
	if e != nil {
		return fixture.Answer{Error: &tools.Error{Code: e.Code, Message: e.Message}}, nil
	}
	out, err := c.jsonOf(field+".output", &output)
	return fixture.Answer{Output: out}, err
}

func (e *expectation) any() bool {
	return e.Result.Kind != 0 || e.ResultFile != "" || e.Schema.Kind != 0 || e.Error != "" || e.Calls != nil
}

// checkExpect checks a result against the case's expectation and returns
// the failures; with update it rewrites the expected result instead of
// failing on it.
func (c *Case) checkExpect(res *ptc.Result, update, replayed bool) (fails []string, updated bool) {
	e := &c.spec.Expect
	if e.Calls != nil {
		var got []string
		for _, r := range res.Trace {
			got = append(got, r.Tool)
		}
		if strings.Join(got, ",") != strings.Join(e.Calls, ",") {
			fails = append(fails, fmt.Sprintf("the tool calls differ from expect.calls:\n  want: [%s]\n  got:  [%s]",
				strings.Join(e.Calls, ", "), strings.Join(got, ", ")))
		}
	}
	if e.Error != "" {
		k, _ := parseKind(e.Error)
		switch {
		case res.Error == nil:
			fails = append(fails, fmt.Sprintf("want error %s, but the script succeeded with %s", e.Error, cassette.Compact(res.Result, 200)))
		case res.Error.Kind != k:
			fails = append(fails, fmt.Sprintf("want error %s, got %s", e.Error, describe(res.Error)))
		case e.Message != "" && !strings.Contains(res.Error.Message, e.Message):
			fails = append(fails, fmt.Sprintf("the %s message does not contain %q:\n  got: %s", e.Error, e.Message, res.Error.Message))
		}
		return fails, false
	}
	if res.Error != nil {
		return append(fails, "the script failed: "+describe(res.Error)), false
	}
	if e.Schema.Kind != 0 {
		raw, err := c.jsonOf("expect.schema", &e.Schema)
		if err != nil {
			return append(fails, err.Error()), false
		}
		s, err := tools.CompileSchema(raw)
		if err != nil {
			return append(fails, fmt.Sprintf("%s: expect.schema: %v", c.File, err)), false
		}
		if vs, err := s.Validate(res.Result); err != nil || len(vs) > 0 {
			msg := "the result is not valid JSON"
			switch {
			case errors.Is(err, tools.ErrCheckTooCostly):
				msg = err.Error()
			case err == nil:
				msg = tools.FormatViolations(vs)
			}
			fails = append(fails, "the result does not match expect.schema: "+msg)
		}
	}
	want, err := c.expectedResult()
	if err != nil {
		return append(fails, err.Error()), false
	}
	switch {
	case want != nil && cassette.Equal(want, res.Result):
	case want != nil && !update:
		msg := "the result differs from the expected JSON (expected → actual):"
		for _, l := range cassette.Diff(want, res.Result, 10) {
			msg += "\n  " + l
		}
		fails = append(fails, msg)
	case want != nil || (update && e.Schema.Kind == 0 && !replayed):
		if err := c.update(res.Result); err != nil {
			return append(fails, fmt.Sprintf("%s: --update: %v", c.File, err)), false
		}
		updated = true
	case !e.any() && !replayed:
		fails = append(fails, fmt.Sprintf("%s has no expectation: add expect.result, expect.schema, expect.error or expect.calls (or run with --update)", c.File))
	}
	return fails, updated
}

func (c *Case) expectedResult() (json.RawMessage, error) {
	e := &c.spec.Expect
	if e.ResultFile != "" {
		b, err := os.ReadFile(c.path(e.ResultFile))
		if err != nil {
			return nil, fmt.Errorf("%s: expect.result_file: %v", c.File, err)
		}
		if !json.Valid(b) {
			return nil, fmt.Errorf("%s: expect.result_file %s is not valid JSON", c.File, e.ResultFile)
		}
		return b, nil
	}
	return c.jsonOf("expect.result", &e.Result)
}

func describe(e *ptc.ExecutionError) string {
	s := e.Kind.String()
	if e.Line > 0 {
		s += fmt.Sprintf(" at line %d:%d", e.Line, e.Column)
	}
	return s + ": " + e.Message
}

func parseKind(s string) (ptc.ErrorKind, bool) { return cassette.ParseKind(s) }

func kindList() string {
	var names []string
	for _, k := range fault.Kinds() {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}
