package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// runPtcd runs the built ptcd binary and returns its exit code and output.
func runPtcd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(ptcdBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
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
