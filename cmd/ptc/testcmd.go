package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/ptcrun/ptc/internal/cassette/suite"
)

// exitTestFailed is the exit code of `ptc test` when a case failed.
const exitTestFailed = 4

// defaultTestDir is where `ptc test` looks for cases without a DIR.
const defaultTestDir = "examples/tests"

// testCmd runs the test cases below a directory (see docs/testing.md) and
// prints a go-test-like report: a --- FAIL line with the reason for each
// failed case (--- PASS too with -v), then ok or FAIL with the counts.
func testCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ptc test", flag.ContinueOnError)
	runRE := fs.String("run", "", "run only the cases whose name matches REGEX")
	junit := fs.String("junit", "", "write a JUnit XML report to FILE")
	update := fs.Bool("update", false, "rewrite the expected result of cases whose script succeeded")
	parallel := fs.Int("parallel", 0, "cases to run at once (0: one per CPU)")
	verbose := fs.Bool("v", false, "list passing cases too")
	if code, ok := parseFlags(fs, splitArgs(args, map[string]bool{"update": true, "v": true}), stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprint(stderr, "ptc test: want at most one DIR\n", usage)
		return exitUsage
	}
	dir := defaultTestDir
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	cfg := suite.Config{Parallel: *parallel, Update: *update}
	if *runRE != "" {
		re, err := regexp.Compile(*runRE)
		if err != nil {
			fmt.Fprintf(stderr, "ptc test: --run: %v\n", err)
			return exitUsage
		}
		cfg.Filter = re
	}
	cases, err := suite.Load(dir)
	if err != nil {
		fmt.Fprintln(stderr, "ptc test:", err)
		return exitUsage
	}
	start := time.Now()
	outcomes := suite.Run(ctx, cases, cfg)
	elapsed := time.Since(start)

	passed, failed := 0, 0
	for _, o := range outcomes {
		d := o.Duration.Round(time.Millisecond)
		switch {
		case !o.Passed:
			failed++
			fmt.Fprintf(stdout, "--- FAIL: %s (%s)\n%s\n", o.Case.Name, d, indent(o.Failure))
		case o.Updated:
			passed++
			fmt.Fprintf(stdout, "--- UPDATE: %s (%s): wrote the expected result\n", o.Case.Name, d)
		default:
			passed++
			if *verbose {
				fmt.Fprintf(stdout, "--- PASS: %s (%s)\n", o.Case.Name, d)
			}
		}
	}
	if *junit != "" {
		if err := writeJUnit(*junit, dir, outcomes, elapsed); err != nil {
			fmt.Fprintln(stderr, "ptc test: --junit:", err)
			return exitUsage
		}
	}
	secs := fmt.Sprintf("%.3fs", elapsed.Seconds())
	switch {
	case len(outcomes) == 0:
		fmt.Fprintf(stdout, "ok  \t%s\t%s [no cases match --run %s]\n", dir, secs, *runRE)
	case failed > 0:
		fmt.Fprintf(stdout, "FAIL\n%s\t%s\t%s (%d passed, %d failed)\n", "FAIL", dir, secs, passed, failed)
		return exitTestFailed
	default:
		fmt.Fprintf(stdout, "ok  \t%s\t%s (%d passed)\n", dir, secs, passed)
	}
	return exitOK
}

func writeJUnit(path, name string, outcomes []suite.Outcome, elapsed time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := suite.WriteJUnit(f, strings.TrimSuffix(name, "/"), outcomes, elapsed); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
