package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/plural"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// exitPaused is the exit code of `ptc run --resumable` and `ptc resume`
// when the execution paused for its caller.
const exitPaused = 5

// durableFlags are the flags of resumable runs.
type durableFlags struct {
	resumable       bool
	clientTools     string
	requireApproval string
	out             string
}

func (d *durableFlags) define(fs *flag.FlagSet) {
	fs.BoolVar(&d.resumable, "resumable", false, "pause at client tools and approvals; print the pause state (JSON) instead of failing them")
	fs.StringVar(&d.clientTools, "client-tools", "", "with --resumable: JSON array of tool definitions the caller answers, or @FILE")
	fs.StringVar(&d.requireApproval, "require-approval", "", "comma-separated server tools whose calls need approval")
	fs.StringVar(&d.out, "continuation", "", "also write the pause state (with its continuation) to FILE")
}

// apply puts the resumable settings into req.
func (d *durableFlags) apply(req *ptc.Request, stdin io.Reader) error {
	req.Resumable = d.resumable
	if d.requireApproval != "" {
		req.RequireApproval = strings.Split(d.requireApproval, ",")
	}
	if d.clientTools == "" {
		return nil
	}
	if !d.resumable {
		return errors.New("--client-tools needs --resumable (their calls pause the execution)")
	}
	b, err := valueArg(d.clientTools, stdin)
	if err != nil {
		return fmt.Errorf("--client-tools: %w", err)
	}
	var defs []tools.Definition
	if err := json.Unmarshal(b, &defs); err != nil {
		return fmt.Errorf("--client-tools: a JSON array of tool definitions: %w", err)
	}
	for _, d := range defs {
		req.ClientTools = append(req.ClientTools, tools.Tool{Definition: d})
	}
	return nil
}

// reportPause prints a paused execution's state — the ExecuteResponse,
// with its pending actions and continuation, in protobuf's JSON mapping —
// on stdout, writes it to --continuation when given, prints the logs on
// stderr unless logsShown (they were printed as they came), and returns
// exitPaused.
func reportPause(res *ptc.Result, out string, logsShown bool, stdout, stderr io.Writer) int {
	var b bytes.Buffer
	if err := printJSON(&b, responsePB(res)); err != nil {
		fmt.Fprintln(stderr, "ptc:", err)
		return exitUsage
	}
	_, _ = stdout.Write(b.Bytes())
	if out != "" {
		if err := os.WriteFile(out, b.Bytes(), 0o600); err != nil {
			fmt.Fprintln(stderr, "ptc:", err)
			return exitUsage
		}
	}
	for _, l := range res.Logs {
		if !logsShown {
			fmt.Fprintf(stderr, "[%s] %s\n", l.Level, l.Message)
		}
	}
	fmt.Fprintf(stderr, "ptc: paused, waiting for %s:\n", plural.Count(len(res.Pending), "call", "calls"))
	printPending(stderr, res.Pending)
	fmt.Fprintln(stderr, "ptc: continue with: ptc resume FILE --approve ID | --deny ID=REASON | --answer ID=JSON | --error ID=CODE:MESSAGE")
	return exitPaused
}

// printPending lists the calls a paused execution waits for, one a line:
// the id to answer, what it waits for, the tool and its arguments (cut
// to a line's worth).
func printPending(w io.Writer, pending []ptc.Action) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, a := range pending {
		what := "answer"
		if a.Approval {
			what = "approval"
		}
		args := string(a.Arguments)
		if n := 100; len(args) > n {
			args = strings.ToValidUTF8(args[:n], "") + "…"
		}
		line := fmt.Sprintf("  %s\t%s\t%s %s", a.CallID, what, a.Tool, args)
		if a.Approval && a.Reason != "" {
			line += " (" + a.Reason + ")"
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
}

// answerFlags collects repeated --answer, --error, --approve and --deny.
type answerFlags struct{ list []string }

func (a *answerFlags) String() string { return strings.Join(a.list, " ") }

func (a *answerFlags) flag(kind string) flag.Value { return answerFlag{a, kind} }

type answerFlag struct {
	a    *answerFlags
	kind string
}

func (f answerFlag) String() string { return "" }

func (f answerFlag) Set(s string) error {
	f.a.list = append(f.a.list, f.kind+"\x00"+s)
	return nil
}

// answers turns the flags into answers for the pending actions ("all"
// approves or denies every pending approval).
func (a *answerFlags) answers(pending []*ptcv1.PendingAction) ([]ptc.Answer, error) {
	var out []ptc.Answer
	for _, e := range a.list {
		kind, v, _ := strings.Cut(e, "\x00")
		id, arg, hasArg := strings.Cut(v, "=")
		if kind == "approve" && hasArg {
			// --approve c1=false must not approve c1: only a bare id is a yes.
			return nil, fmt.Errorf("--approve %s: give the call id alone (or all), not ID=VALUE; to refuse a call use --deny ID=REASON", v)
		}
		ids := []string{id}
		if id == "all" && (kind == "approve" || kind == "deny") {
			ids = nil
			for _, p := range pending {
				if p.GetKind() == ptcv1.ActionKind_ACTION_KIND_APPROVAL {
					ids = append(ids, p.GetCallId())
				}
			}
		}
		for _, id := range ids {
			ans := ptc.Answer{CallID: id}
			switch kind {
			case "approve":
				ans.Approve = true
			case "deny":
				ans.Deny, ans.Reason = true, arg
			case "answer":
				if !json.Valid([]byte(arg)) {
					return nil, fmt.Errorf("--answer %s: %q is not JSON", id, arg)
				}
				ans.Output = json.RawMessage(arg)
			case "error":
				code, msg, _ := strings.Cut(arg, ":")
				ans.Error = &tools.Error{Code: code, Message: msg}
			}
			out = append(out, ans)
		}
	}
	return out, nil
}

// resumeCmd resumes a paused execution: `ptc resume [FILE|-] answers…`.
func resumeCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ptc resume", flag.ContinueOnError)
	var srv serverFlags
	srv.register(fs, "resume on a ptcd server at ADDR (default: on this machine, with the local key)")
	jsonOut := fs.Bool("json", false, "print the whole response on stdout as a ptc.v1 ExecuteResponse in protobuf's JSON mapping")
	out := fs.String("continuation", "", "write the next pause state to FILE")
	inProcess := fs.Bool("inprocess", false, "run the script in this process instead of a worker process (not a sandbox: trusted scripts only)")
	var a answerFlags
	fs.Var(a.flag("answer"), "answer", "ID=JSON: a client tool's output (repeatable)")
	fs.Var(a.flag("error"), "error", "ID=CODE:MESSAGE: a client tool's error (repeatable)")
	fs.Var(a.flag("approve"), "approve", "ID, or all: approve a call (repeatable)")
	fs.Var(a.flag("deny"), "deny", "ID=REASON, or all=REASON: deny a call (repeatable)")
	if code, ok := parseFlags(fs, splitArgs(args, map[string]bool{"json": true, "tls": true, "inprocess": true}), stdout, stderr); !ok {
		return code
	}
	if err := srv.check(); err != nil {
		fmt.Fprintln(stderr, "ptc resume:", err)
		return exitUsage
	}
	if *inProcess && srv.addr != "" {
		fmt.Fprintln(stderr, "ptc resume: --inprocess and --server do not go together")
		return exitUsage
	}
	if fs.NArg() > 1 {
		fmt.Fprint(stderr, "ptc resume: want at most one FILE (the pause state, or - for stdin)\n", usage)
		return exitUsage
	}
	var raw []byte
	var err error
	if fs.NArg() == 0 || fs.Arg(0) == "-" {
		raw, err = io.ReadAll(io.LimitReader(stdin, 64<<20))
	} else {
		raw, err = os.ReadFile(fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintln(stderr, "ptc:", err)
		return exitUsage
	}
	state, err := readPauseState(raw)
	if err != nil {
		name := "stdin"
		if fs.NArg() == 1 && fs.Arg(0) != "-" {
			name = fs.Arg(0)
		}
		fmt.Fprintf(stderr, "ptc resume: %s %v; give the JSON that ptc run --resumable printed (or wrote with --continuation), or its continuation\n", name, err)
		return exitUsage
	}
	answers, err := a.answers(state.GetPendingActions())
	if err != nil {
		fmt.Fprintln(stderr, "ptc:", err)
		return exitUsage
	}
	var res *ptc.Result
	if srv.addr != "" {
		c, err := srv.dial()
		if err != nil {
			return srv.failed(stderr, err)
		}
		defer c.Close()
		res, err = c.Resume(ctx, state.GetContinuation(), answers...)
		if err != nil {
			return srv.failed(stderr, err)
		}
	} else {
		r, err := newDurableRunner(local{*inProcess, stderr})
		if err != nil {
			fmt.Fprintln(stderr, "ptc:", err)
			return exitUsage
		}
		defer r.Close()
		res, err = r.Resume(ctx, state.GetContinuation(), answers...)
		if err != nil {
			fmt.Fprintln(stderr, "ptc:", err)
			return exitRejected
		}
	}
	if res.RequiresAction() {
		return reportPause(res, *out, false, stdout, stderr)
	}
	for _, l := range res.Logs {
		fmt.Fprintf(stderr, "[%s] %s\n", l.Level, l.Message)
	}
	return report(res, "", *jsonOut, stdout, stderr)
}

// newDurableRunner is the runner of resumable `ptc run` and of `ptc
// resume`: the demo tools, the script where l says, and continuations
// signed with the local key ($PTC_HOME, or the user's config directory,
// /ptc/continuation.key, made on first use) and used once (durable.db
// beside it).
func newDurableRunner(l local) (*ptc.Runner, error) {
	dir := os.Getenv("PTC_HOME")
	if dir == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("no directory for the local continuation key: set PTC_HOME (%w)", err)
		}
		dir = filepath.Join(base, "ptc")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dir, "continuation.key")
	key, err := os.ReadFile(keyFile)
	if errors.Is(err, os.ErrNotExist) {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		key = []byte(hex.EncodeToString(b))
		f, err := os.OpenFile(keyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, err
		}
		_, werr := f.Write(key)
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			return nil, werr
		}
	} else if err != nil {
		return nil, err
	}
	return ptc.NewRunner(append(l.options(), ptc.WithTools(demo.Tools()...), ptc.WithDurable(ptc.Durable{
		Keys: map[string][]byte{"local": bytes.TrimSpace(key)}, SigningKey: "local",
		StateFile: filepath.Join(dir, "durable.db"), Parked: -1}))...)
}

// readPauseState reads what `ptc resume` is given: the pause state
// (an ExecuteResponse in protobuf's JSON mapping) or a bare continuation.
// Anything else is refused here, saying what it is not, rather than by
// the continuation's decoder.
func readPauseState(raw []byte) (*ptcv1.ExecuteResponse, error) {
	t := bytes.TrimSpace(raw)
	state := &ptcv1.ExecuteResponse{}
	switch {
	case len(t) == 0:
		return nil, errors.New("is empty")
	case t[0] == '{':
		if err := protojson.Unmarshal(t, state); err != nil {
			return nil, fmt.Errorf("is JSON but not a pause state (%v)", err)
		}
		if state.GetContinuation() == "" {
			return nil, errors.New("is not a pause state: it has no continuation (the execution it reports did not pause)")
		}
	case !isContinuation(t):
		return nil, errors.New("is not a pause state: neither JSON nor a continuation")
	default:
		state.Continuation = string(t)
	}
	return state, nil
}

// isContinuation reports whether t could be a continuation: one word of
// base64url text.
func isContinuation(t []byte) bool {
	for _, c := range t {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
