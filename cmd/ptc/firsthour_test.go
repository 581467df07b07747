package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/testenv"
)

// TestMCPConfigFromAnotherDirectory: `ptc mcp --config examples/mcp.yaml`
// started from another directory, as a desktop MCP client starts it, fails
// saying that the relative command was looked for from the working
// directory, and how to set it, instead of advising to fix the server.
func TestMCPConfigFromAnotherDirectory(t *testing.T) {
	cfg, err := filepath.Abs("../../examples/mcp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(ptcBin, "mcp", "--config", cfg)
	cmd.Dir = dir
	code, _, stderr := testenv.Run(t, cmd)
	for _, want := range []string{
		"fork/exec node_modules/.bin/mcp-server-everything",
		"a relative command is looked for from the working directory, " + dir + ", not from the configuration file's directory",
		"(cwd)", "an absolute command or a dir",
	} {
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, exitUsage, want)
		}
	}
	if strings.Contains(stderr, "fix the server") {
		t.Fatalf("stderr %q still blames the server", stderr)
	}
}

// TestReplayDivergenceOneNumber: a replayed script whose second call is
// refused for its arguments (and caught) and whose third call then differs
// too names call #2 in the script's error and in the summary alike.
func TestReplayDivergenceOneNumber(t *testing.T) {
	const recorded = `const a = await tools.get_budget_by_level({level: "mid"});
const b = await tools.get_budget_by_level({level: "senior"});
const c = await tools.get_budget_by_level({level: "staff"});
return [a, b, c]`
	const changed = `const a = await tools.get_budget_by_level({level: "mid"});
let b;
try { b = await tools.get_budget_by_level({level: "Senior"}); } catch (e) { console.log(e.code); }
const c = await tools.get_budget_by_level({level: "principal"});
return [a, b, c]`
	tape := filepath.Join(t.TempDir(), "t.jsonl")
	if code, _, stderr := ptcMain(t, "run", writeScript(t, "a.js", recorded), "--record", tape); code != 0 {
		t.Fatalf("record: exit %d: %s", code, stderr)
	}
	code, _, stderr := ptcMain(t, "run", writeScript(t, "b.js", changed), "--replay", tape)
	if code != exitDivergence {
		t.Fatalf("replay: exit %d, want %d: %s", code, exitDivergence, stderr)
	}
	seqs := regexp.MustCompile(`replay divergence at call #(\d+)`).FindAllStringSubmatch(stderr, -1)
	if len(seqs) != 2 {
		t.Fatalf("want the divergence in the script error and in the summary:\n%s", stderr)
	}
	for _, m := range seqs {
		if m[1] != "2" {
			t.Fatalf("the divergence is named #%s, want #2 everywhere:\n%s", m[1], stderr)
		}
	}
	if !strings.Contains(stderr, `recorded: {"level":"senior"}`) {
		t.Fatalf("the summary does not show call #2's arguments:\n%s", stderr)
	}
}

// TestPauseListsWaitingCalls: a paused run names each call it waits for,
// with its id, what it waits for, its tool and its arguments.
func TestPauseListsWaitingCalls(t *testing.T) {
	t.Setenv("PTC_HOME", t.TempDir())
	script := writeScript(t, "wait.js", `
		const [a, b] = await Promise.all([tools.ask({question: "which level?"}), tools.get_budget_by_level({level: "mid"})]);
		return [a, b];`)
	code, stdout, stderr := ptcMain(t, "run", script, "--resumable", "--client-tools", `[{"name":"ask"}]`,
		"--require-approval", "get_budget_by_level")
	if code != exitPaused {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`ptc: paused, waiting for 2 calls:\n`),
		regexp.MustCompile(`\n  c1 +answer +ask \{"question":"which level\?"\}\n`),
		regexp.MustCompile(`\n  c2 +approval +get_budget_by_level \{"level":"mid"\}`),
		regexp.MustCompile(`\nptc: continue with: ptc resume FILE --approve ID`),
	} {
		if !want.MatchString(stderr) {
			t.Fatalf("stderr does not match %s:\n%s", want, stderr)
		}
	}
}

// TestResumeRefusesWhatIsNotAPause: ptc resume given a script, a result
// or other JSON says the file is not a pause state and what to give.
func TestResumeRefusesWhatIsNotAPause(t *testing.T) {
	t.Setenv("PTC_HOME", t.TempDir())
	tests := []struct {
		name, content, want string
	}{
		{"a script", "return await tools.ask({})\n", "is not a pause state: neither JSON nor a continuation"},
		{"a result", `{"executionId": "ex_1", "resultJson": "1", "modelMessage": "1"}`, "is not a pause state: it has no continuation"},
		{"other JSON", `{"over_by": 12}`, "is JSON but not a pause state"},
		{"an empty file", "\n", "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeScript(t, "state.json", tt.content)
			code, _, stderr := ptcMain(t, "resume", p, "--approve", "all")
			want := "ptc resume: " + p + " " + tt.want
			if code != exitUsage || !strings.HasPrefix(stderr, want) ||
				!strings.Contains(stderr, "give the JSON that ptc run --resumable printed") || strings.Contains(stderr, "base64url") {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, exitUsage, want)
			}
		})
	}
}

// TestStackTracesNameTheFile: the frames of a script's stack trace name
// the file as the user gave it, not the engine's script.js or script.ts,
// whether the script runs, is recorded or is replayed from its cassette.
func TestStackTracesNameTheFile(t *testing.T) {
	const src = "function f() { throw new Error(\"x\") }\nconst g = () => f();\nreturn g()\n"
	js := writeScript(t, "budget-check.js", src)
	ts := writeScript(t, "budget-check.ts", src)
	tape := filepath.Join(t.TempDir(), "t.jsonl")
	tests := []struct {
		name string
		args []string
		file string
	}{
		{"javascript", []string{"run", js}, js},
		{"typescript", []string{"run", ts}, ts},
		{"recorded", []string{"run", js, "--record", tape}, js},
		{"replayed from the cassette", []string{"run", "--replay", tape}, js},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := ptcMain(t, tt.args...)
			if code != exitKindBase+2 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stderr, "    at f ("+tt.file+":1:22)\n") || strings.Contains(stderr, "script.js") || strings.Contains(stderr, "script.ts") {
				t.Fatalf("the stack does not name %s:\n%s", tt.file, stderr)
			}
		})
	}
}

// TestStackWithFile: only frame positions are renamed.
func TestStackWithFile(t *testing.T) {
	tests := []struct {
		name, stack, file, want string
	}{
		{"named frame", "at f (script.js:1:22)", "a.js", "at f (a.js:1:22)"},
		{"anonymous frame", "at script.ts:3:9", "dir/b.ts", "at dir/b.ts:3:9"},
		{"no file", "at f (script.js:1:22)", "", "at f (script.js:1:22)"},
		{"a name that only ends so", "at f (myscript.js:1:2)", "a.js", "at f (myscript.js:1:2)"},
		{"no position", "at script.js", "a.js", "at script.js"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stackWithFile(tt.stack, tt.file); got != tt.want {
				t.Errorf("stackWithFile(%q, %q) = %q, want %q", tt.stack, tt.file, got, tt.want)
			}
		})
	}
}
