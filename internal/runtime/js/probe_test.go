package js_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// Scripts that could crash the process (a Go stack overflow is fatal, not
// a panic) run in a child process of the test binary: a crash fails the
// one case with the child's output instead of taking the package down.

const probeEnv = "PTC_JS_PROBE"

// probeResult is what the child reports about one execution.
type probeResult struct {
	Result string `json:"result"`
	Kind   string `json:"kind"`
	Msg    string `json:"message"`
}

// runProbeChild runs the probe named by the environment, if any, prints
// its outcome as JSON and reports true (the test binary then exits).
func runProbeChild() bool {
	file := os.Getenv(probeEnv)
	if file == "" {
		return false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	var req struct {
		Source string        `json:"source"`
		Limits limits.Limits `json:"limits"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	lim := limits.DefaultPolicy().Resolve(req.Limits, limits.Limits{})
	d := bridge.New(bridge.Config{ExecutionID: "probe", Tools: testTools(nil), MaxCalls: lim.MaxToolCalls, MaxConcurrent: lim.MaxConcurrentToolCalls})
	e := js.New()
	// An Engine's first execution counts every built-in reachable from a
	// value (builtins.go); later ones only for code that can reach them.
	// The probe runs as a later one.
	if warm := e.Run(context.Background(), &runtime.Job{ExecutionID: "warm", Source: "return 1", Limits: lim,
		Logs: runtime.NewLogBuffer(time.Now(), lim, nil)}); warm.Err != nil {
		fmt.Fprintln(os.Stderr, "warm-up:", warm.Err)
		os.Exit(3)
	}
	out := e.Run(context.Background(), &runtime.Job{ExecutionID: "probe", Source: req.Source, Limits: lim, Tools: d,
		Logs: runtime.NewLogBuffer(time.Now(), lim, nil)})
	res := probeResult{Result: string(out.Result)}
	if out.Err != nil {
		res.Kind, res.Msg = out.Err.Kind.String(), out.Err.Message
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	os.Exit(0)
	return true
}

// probe runs src in a child process and returns its outcome; the test
// fails if the child did not exit cleanly.
func probe(t *testing.T, src string, lim limits.Limits) probeResult {
	t.Helper()
	// Generous time: the probes build large values, and the race detector
	// slows them tenfold.
	if lim.CPUTime == 0 {
		lim.CPUTime = 5 * time.Minute
	}
	if lim.Timeout == 0 {
		lim.Timeout = 5 * time.Minute
	}
	b, err := json.Marshal(map[string]any{"source": src, "limits": lim})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "probe.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), probeEnv+"="+file)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := stderr.String()
		if len(msg) > 600 {
			msg = msg[:600] + "…"
		}
		t.Fatalf("the execution crashed the process (%v):\n%s", err, msg)
	}
	var res probeResult
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
		t.Fatalf("child output %q: %v", stdout.String(), err)
	}
	return res
}

// probeCase is one hostile script and the outcome it must have: a result
// (want) or an error of a kind whose message contains msg.
type probeCase struct {
	name string
	src  string
	want string
	kind fault.Kind
	msg  string
	lim  limits.Limits
}

func runProbes(t *testing.T, cases []probeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := probe(t, c.src, c.lim)
			if c.want != "" {
				if res.Kind != "" || res.Result != c.want {
					t.Fatalf("result %s, error %s %q; want %s", res.Result, res.Kind, res.Msg, c.want)
				}
				return
			}
			if res.Kind != c.kind.String() || !strings.Contains(res.Msg, c.msg) {
				t.Fatalf("got %s %q (result %s), want %s containing %q", res.Kind, res.Msg, res.Result, c.kind, c.msg)
			}
		})
	}
}
