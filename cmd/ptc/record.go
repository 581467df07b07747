package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/cassette"
	"github.com/ptcrun/ptc/internal/plural"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// exitDivergence is the exit code of `ptc run --replay` when the run
// diverges from the cassette (another call, another argument, a missing or
// extra call, or another result).
const exitDivergence = 3

// applyDeterminism turns on deterministic mode for --deterministic and
// --seed (a seed implies deterministic mode).
func applyDeterminism(f runFlags, req *ptc.Request) {
	if f.deterministic || f.seed != 0 {
		req.Deterministic, req.Seed = true, f.seed
	}
}

// randomSeed returns a seed in [1, 2^53), so that it survives tools that
// read JSON numbers as doubles.
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])%(1<<53-1) + 1
}

// recordCmd runs req (on this machine or on the server, like `ptc run`) in
// deterministic mode with tool results kept in the trace, reports it, and
// writes the cassette to f.record. Recording reads the trace rather than
// wrapping handlers, so server tools, client tools and in-process tools
// are recorded the same way.
func recordCmd(ctx context.Context, f runFlags, req ptc.Request, scriptPath string, stdout, stderr io.Writer) int {
	req.Deterministic, req.IncludeToolResults = true, true
	if req.Seed == 0 {
		req.Seed = randomSeed()
	}
	var (
		res  *ptc.Result
		defs []tools.Definition
		err  error
	)
	if f.server.addr != "" {
		res, defs, err = recordRemote(ctx, f, req)
	} else {
		var r *ptc.Runner
		if r, err = newLocalRunner(local{f.inProcess, stderr}); err == nil {
			defer r.Close()
			defs = r.Tools()
			res, err = r.Execute(ctx, req)
		}
	}
	if err != nil {
		return f.server.failed(stderr, err)
	}
	code := report(res, scriptPath, f.jsonOut, stdout, stderr)
	c, err := cassette.New(req, allowed(defs, req.AllowedTools), scriptPath, res)
	if err != nil {
		fmt.Fprintln(stderr, "ptc: --record:", err)
		return exitUsage
	}
	if err := writeCassette(f.record, c); err != nil {
		fmt.Fprintln(stderr, "ptc: --record:", err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "ptc: recorded %s (seed %d) to %s\n", plural.Count(len(c.Calls), "tool call", "tool calls"), req.Seed, f.record)
	return code
}

func recordRemote(ctx context.Context, f runFlags, req ptc.Request) (*ptc.Result, []tools.Definition, error) {
	c, err := f.server.dial()
	if err != nil {
		return nil, nil, err
	}
	defs, err := c.Tools(ctx)
	c.Close()
	if err != nil {
		return nil, nil, err
	}
	if f.clientDemo {
		for _, t := range demo.Tools() {
			defs = append(defs, t.Definition)
		}
	}
	res, err := runRemote(ctx, f, req)
	return res, defs, err
}

// allowed keeps the definitions an allowlist names (all when it is empty).
func allowed(defs []tools.Definition, names []string) []tools.Definition {
	if len(names) == 0 {
		return defs
	}
	var out []tools.Definition
	for _, d := range defs {
		if slices.Contains(names, d.Name) {
			out = append(out, d)
		}
	}
	return out
}

func writeCassette(path string, c *cassette.Cassette) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cassette-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := c.Write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func readCassette(path string) (*cassette.Cassette, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := cassette.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// replayCmd runs a script in-process with every tool answered from the
// cassette f.replay. The script, input, limits, seed and clock come from
// the cassette unless scriptPath, --input, the limit flags, --seed or
// --result-schema override them. A run that diverges from the recording
// prints the first divergence and exits with exitDivergence.
func replayCmd(ctx context.Context, f runFlags, scriptPath string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case f.server.addr != "" || f.clientDemo:
		fmt.Fprintln(stderr, "ptc: --replay runs in-process with the recorded tools: drop --server and --client-demo-tools")
		return exitUsage
	case f.record != "":
		fmt.Fprintln(stderr, "ptc: --replay and --record cannot be combined")
		return exitUsage
	case f.allow != "":
		fmt.Fprintln(stderr, "ptc: --allow does not apply to --replay: the recorded tools are used")
		return exitUsage
	}
	c, err := readCassette(f.replay)
	if err != nil {
		fmt.Fprintln(stderr, "ptc: --replay:", err)
		return exitUsage
	}
	req, err := c.Replay()
	if err != nil {
		fmt.Fprintln(stderr, "ptc: --replay:", err)
		return exitUsage
	}
	if scriptPath != "" {
		src, err := os.ReadFile(scriptPath)
		if err != nil {
			fmt.Fprintln(stderr, "ptc:", err)
			return exitUsage
		}
		if err := setScript(&req, scriptPath, src, f.language); err != nil {
			fmt.Fprintln(stderr, "ptc:", err)
			return exitUsage
		}
		if sum := cassette.ScriptSHA256(req); sum != c.Request.ScriptSHA256 {
			fmt.Fprintf(stderr, "ptc: %s differs from the recorded script (sha256 %.12s…, recorded %.12s…)\n", scriptPath, sum, c.Request.ScriptSHA256)
		}
	}
	if !f.readValues(&req, stdin, stderr) {
		return exitUsage
	}
	if f.seed != 0 {
		req.Seed = f.seed
	}
	overrideLimits(&req.Limits, f.limits)
	req.OnLog = func(e ptc.LogEntry) { fmt.Fprintf(stderr, "[%s] %s\n", e.Level, e.Message) }

	rp := cassette.NewReplayer(c)
	rp.Observe(&req)
	r, err := ptc.NewRunner(append(local{f.inProcess, stderr}.options(), ptc.WithTools(rp.Tools()...))...)
	if err != nil {
		fmt.Fprintln(stderr, "ptc: --replay: the recorded tools:", err)
		return exitUsage
	}
	defer r.Close()
	res, err := r.Execute(ctx, req)
	if err != nil {
		fmt.Fprintln(stderr, "ptc:", err)
		return exitRejected
	}
	name := scriptPath
	if name == "" {
		name = c.Request.ScriptPath
	}
	code := report(res, name, f.jsonOut, stdout, stderr)
	if d := rp.Check(res); d != nil {
		fmt.Fprintln(stderr, "ptc:", d.Error())
		return exitDivergence
	}
	fmt.Fprintf(stderr, "ptc: replay matches the recording (%s)\n", plural.Count(len(c.Calls), "tool call", "tool calls"))
	return code
}

// overrideLimits sets the fields of dst that o sets.
func overrideLimits(dst *ptc.Limits, o ptc.Limits) {
	if o.Timeout != 0 {
		dst.Timeout = o.Timeout
	}
	if o.CPUTime != 0 {
		dst.CPUTime = o.CPUTime
	}
	if o.MemoryBytes != 0 {
		dst.MemoryBytes = o.MemoryBytes
	}
	if o.MaxToolCalls != 0 {
		dst.MaxToolCalls = o.MaxToolCalls
	}
	if o.MaxOutputBytes != 0 {
		dst.MaxOutputBytes = o.MaxOutputBytes
	}
}
