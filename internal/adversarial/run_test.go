package adversarial

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

var onlyFamily = flag.String("family", "", "run only the cases of this family")

var runDefects = flag.Bool("defects", false, "also run the cases marked with a known defect, and report which still reproduce")

var runResiduals = flag.Bool("residuals", false, "also run the cases that show a mode's documented residual risks (they may crash the server)")

// verdict is the outcome of one case in one mode, for the summary.
type verdict struct {
	family family
	mode   mode
	state  string // pass, skip, fail, residual
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
	fmt.Fprintf(&b, "\n%-12s %-10s %5s %5s %5s %8s\n", "family", "mode", "pass", "skip", "fail", "residual")
	tot := map[string]int{}
	for _, f := range families {
		for _, m := range []mode{worker, inprocess} {
			c := counts[key{f, m}]
			if c == nil {
				continue
			}
			fmt.Fprintf(&b, "%-12s %-10s %5d %5d %5d %8d\n", f, m, c["pass"], c["skip"], c["fail"], c["residual"])
			for s, n := range c {
				tot[s] += n
			}
		}
	}
	fmt.Fprintf(&b, "%-12s %-10s %5d %5d %5d %8d\n", "total", "", tot["pass"], tot["skip"], tot["fail"], tot["residual"])
	return b.String()
}

// runCase runs c against srv and returns the problems found (empty when
// the case passes).
// minBound is the least time any case is given: on a loaded machine, with
// the other mode's bombs running beside it, a trivial case may take
// seconds; a hang or a limit not enforced still runs far past it.
const minBound = 15 * time.Second

func runCase(t *testing.T, c *tcase, srv *server, dir string) (problems []string, skipped string) {
	bound := max(c.bound, minBound)
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
	ctx, cancel := context.WithTimeout(context.Background(), bound+5*time.Second)
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
	for _, n := range e.notes {
		t.Log(n)
	}
	if sampler != nil {
		peak := sampler.stop()
		if grew := peak - before; grew > c.serverGrowth {
			problems = append(problems, fmt.Sprintf("ptcd's RSS grew by %s during the case (from %s to %s), more than the %s allowed",
				mib(grew), mib(before), mib(peak), mib(c.serverGrowth)))
		}
	}
	if took > bound {
		problems = append(problems, fmt.Sprintf("answered after %v, beyond the bound of %v", took.Round(time.Millisecond), bound))
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
	if took > bound || *runDefects && c.defect != "" || *runResiduals && c.residual != "" {
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

// exclusive keeps the concurrency family's bursts (dozens of busy worker
// processes, GiBs allocated) from running beside the other mode's cases:
// on a small host they would starve an innocent case past its time bound.
var exclusive sync.RWMutex

// runExclusive runs c as runCase does, alone when it is a burst.
func runExclusive(t *testing.T, c *tcase, srv *server, dir string) ([]string, string) {
	if c.family == famConcurrency {
		exclusive.Lock()
		defer exclusive.Unlock()
	} else {
		exclusive.RLock()
		defer exclusive.RUnlock()
	}
	return runCase(t, c, srv, dir)
}

// TestAdversarial runs every case in each mode against its own ptcd, the
// two modes side by side (but a burst of one mode alone), and logs a
// summary per family and mode.
func TestAdversarial(t *testing.T) {
	cases := allCases()
	var tl tally
	t.Cleanup(func() {
		t.Log("adversarial suite:" + tl.summary())
		// The table is a figure of every run, passing or not: CI keeps it
		// where go test, which shows a passing package's output only with
		// -v, would not.
		if f := os.Getenv("PTC_ADVERSARIAL_SUMMARY"); f != "" {
			if err := os.WriteFile(f, []byte("adversarial suite:"+tl.summary()+"\n"), 0o644); err != nil {
				t.Errorf("writing the summary: %v", err)
			}
		}
	})
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
					if r := c.residualIn(m); r != "" && !*runResiduals {
						tl.add(c.family, m, "residual")
						t.Skipf("RESIDUAL RISK of %s mode, documented in docs/security.md: %s", m, r)
					}
					d := c.defectIn(m)
					if d != "" && !*runDefects {
						tl.add(c.family, m, "skip")
						t.Skipf("KNOWN DEFECT, case skipped: %s", d)
					}
					problems, skipped := runExclusive(t, c, srv, dir)
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
// bound and an attack per case, at least 120 cases, and a fast case free
// of known defects of every family in each mode — and logs how many
// cases each family has and the known defects.
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
	all, fast, defects, residuals := map[key]int{}, map[key]int{}, map[key]int{}, map[key]int{}
	for _, c := range cases {
		for _, m := range []mode{worker, inprocess} {
			if !c.applies(m) {
				continue
			}
			k := key{c.family, m}
			all[k]++
			if c.fast && c.defectIn(m) == "" && c.residualIn(m) == "" {
				fast[k]++
			}
			if c.defectIn(m) != "" {
				defects[k]++
			}
			if c.residualIn(m) != "" {
				residuals[k]++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d cases\n%-12s %-10s %5s %5s %7s %8s\n", len(cases), "family", "mode", "cases", "fast*", "defect", "residual")
	for _, f := range families {
		for _, m := range []mode{worker, inprocess} {
			k := key{f, m}
			fmt.Fprintf(&b, "%-12s %-10s %5d %5d %7d %8d\n", f, m, all[k], fast[k], defects[k], residuals[k])
			if fast[k] == 0 && all[k] > 0 {
				// A family that runs in one mode only (python: worker
				// mode, ptcd's default) needs its fast case there.
				t.Errorf("family %s has no fast case free of known defects in %s mode", f, m)
			}
		}
	}
	t.Log("case table (fast*: fast cases free of known defects):\n" + b.String())
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

// TestResidualsDocumented: every residual risk a case shows is documented,
// by the case's name, in docs/security.md.
func TestResidualsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range allCases() {
		if c.residual != "" && !strings.Contains(string(doc), "`"+c.name+"`") {
			t.Errorf("case %s shows a residual risk (%s) that docs/security.md does not name", c.name, c.residual)
		}
	}
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
