package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/testenv"
)

// runPtcd runs the built ptcd binary and returns its exit code and output.
func runPtcd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(ptcdBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return testenv.Run(t, cmd)
}

// TestHelpListsCommands checks that every way of asking ptcd for help
// lists its subcommands, and that a mistyped command or flag says where
// to look.
func TestHelpListsCommands(t *testing.T) {
	commands := []string{"ptcd [flags]", "ptcd check [flags]", "ptcd hash-token < token.txt", "ptcd help", "-config", "-limits.defaults.timeout"}
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"-h", []string{"-h"}, 0, commands, ""},
		{"--help", []string{"--help"}, 0, commands, ""},
		{"help", []string{"help"}, 0, commands, ""},
		{"check -h", []string{"check", "-h"}, 0, commands, ""},
		{"hash-token -h", []string{"hash-token", "-h"}, 0, []string{"usage: ptcd hash-token < token.txt"}, ""},
		{"unknown flag", []string{"--bogus"}, 2, nil, "ptcd: flag provided but not defined: -bogus (ptcd -h lists the commands and flags)\n"},
		{"unknown command", []string{"serve"}, 2, nil, "ptcd: unknown command \"serve\": the commands are check, hash-token and help (ptcd -h lists the commands and flags)\n"},
		{"unknown flag of check", []string{"check", "--bogus"}, 2, nil, "ptcd check: flag provided but not defined: -bogus (ptcd -h lists the commands and flags)\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runPtcd(t, "", tc.args...)
			if code != tc.code || stderr != tc.stderr {
				t.Fatalf("exit %d (want %d)\nstderr %q\nwant   %q", code, tc.code, stderr, tc.stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(stdout, want) {
					t.Fatalf("stdout lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// TestConfigErrors checks what ptcd prints for a configuration it
// refuses: one line naming the key, where the value came from, both
// values of a conflict and the fix; exit 2.
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, yaml string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	above := file("above.yaml", "limits:\n  defaults:\n    timeout: 10m\n")
	typo := file("typo.yaml", "limits:\n  defaults:\n    timeot: 1m\n")
	cases := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"default above ceiling", []string{"--config", above, "--print-config"}, nil,
			"ptcd: config: " + above + ":3:14: limits.defaults.timeout: 10m0s is above its ceiling limits.ceilings.timeout (5m0s): lower the default or raise the ceiling\n"},
		{"unknown key", []string{"--config", typo}, nil,
			"ptcd: config: " + typo + ":3:5: limits.defaults.timeot: unknown key \"timeot\" (did you mean timeout?): the keys here are timeout, cpu_time, memory_bytes, max_tool_calls, max_concurrent_tool_calls, max_output_bytes, max_log_bytes, max_log_entries, max_result_tokens, max_pauses, max_paused_time\n"},
		{"environment", []string{"--print-config"}, []string{"PTC_SHUTDOWN_GRACE=15"},
			"ptcd: config: shutdown_grace (environment variable PTC_SHUTDOWN_GRACE): duration \"15\" has no unit: write e.g. \"15s\" or \"15m\"\n"},
		{"flag", []string{"--limits.ceilings.timeout", "10s", "--print-config"}, nil,
			"ptcd: config: limits.defaults.timeout: 30s is above its ceiling limits.ceilings.timeout (10s): lower the default or raise the ceiling\n"},
		{"check", []string{"check", "--workers.mode", "fast"}, nil,
			"ptcd check: config: workers.mode (flag -workers.mode): \"fast\" is not a mode: use worker (isolated processes) or inprocess\n"},
		{"missing file", []string{"--config", dir + "/nope.yaml"}, nil,
			"ptcd: config: " + dir + "/nope.yaml: no such file or directory\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(ptcdBin, tc.args...)
			cmd.Env = append(os.Environ(), tc.env...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || errb.String() != tc.want || out.Len() != 0 {
				t.Fatalf("%v\nstderr %q\nwant   %q\nstdout %q", err, errb.String(), tc.want, out.String())
			}
		})
	}
}

// TestPortInUse: a listen address in use (gRPC, metrics or MCP) fails
// ptcd with exit 1 and one line naming the listener, the flag and key
// that set it and how to turn it off, before anything starts: no worker
// is started only to be killed (no worker log, no other record).
func TestPortInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	inUse := "listen tcp " + addr + ": bind: address already in use: give another address"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"grpc", []string{"--listen", addr, "--metrics-listen", "127.0.0.1:0"},
			"ptcd: gRPC listener (--listen, listen): " + inUse + "\n"},
		{"metrics", []string{"--listen", "127.0.0.1:0", "--metrics-listen", addr},
			"ptcd: metrics listener (--metrics-listen, metrics.listen): " + inUse + ", or --metrics-listen \"\" to turn it off\n"},
		{"mcp", []string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--mcp.listen", addr},
			"ptcd: MCP listener (--mcp.listen, mcp.listen): " + inUse + ", or --mcp.listen \"\" to turn it off\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(ptcdBin, append(tc.args, "--demo-tools", "--workers.mode", "worker")...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || errb.String() != tc.want || out.Len() != 0 {
				t.Fatalf("%v\nstderr %q\nwant   %q\nstdout %q", err, errb.String(), tc.want, out.String())
			}
		})
	}
}
