package prompt

import (
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/limits"
)

func TestPromptContent(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string
		not  []string
	}{
		{
			name: "defaults",
			opts: Options{},
			want: []string{"JavaScript", "async function", "return", "tools.<name>(args)", "Promise.all",
				"try/catch", "err.code", "ToolArgumentError", "ToolError", "ToolCallLimitError", "console.log",
				"never returned", "`input`", "30s in total", "at most 1000 tool calls", "at most 1 MiB of JSON",
				"require", "import", "fetch", "timers"},
			not: []string{"TypeScript"},
		},
		{
			name: "custom limits",
			opts: Options{Limits: limits.Limits{Timeout: 90 * time.Second, MaxToolCalls: 25, MaxOutputBytes: 64 << 10}},
			want: []string{"1m30s in total", "at most 25 tool calls", "at most 64 KiB of JSON"},
		},
		{
			name: "odd limits",
			opts: Options{Limits: limits.Limits{Timeout: 1500 * time.Millisecond, MaxToolCalls: 1, MaxOutputBytes: 1500}},
			want: []string{"2s in total", "at most 1 tool call,", "at most 1500 bytes of JSON"},
		},
		{
			name: "minutes and sub-second",
			opts: Options{Limits: limits.Limits{Timeout: 2 * time.Minute}},
			want: []string{"2m in total"},
		},
		{
			name: "sub-second",
			opts: Options{Limits: limits.Limits{Timeout: 250 * time.Millisecond}},
			want: []string{"250ms in total"},
		},
		{
			name: "typescript",
			opts: Options{TypeScript: true},
			want: []string{"Write a TypeScript script"},
			not:  []string{"JavaScript"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Prompt(tt.opts)
			for _, w := range tt.want {
				if !strings.Contains(p, w) {
					t.Errorf("prompt lacks %q:\n%s", w, p)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(p, w) {
					t.Errorf("prompt contains %q:\n%s", w, p)
				}
			}
		})
	}
}

// TestPromptCompact holds the prompt to its token budget, by the package's
// own estimate and by the cruder four-bytes-per-token rule.
func TestPromptCompact(t *testing.T) {
	const budget = 350
	for _, opts := range []Options{{}, {TypeScript: true, Limits: limits.Limits{Timeout: 5 * time.Minute, MaxToolCalls: 100000, MaxOutputBytes: 16 << 20}}} {
		p := Prompt(opts)
		if n := ApproxTokens(p); n > budget {
			t.Errorf("prompt is about %d tokens, over the %d budget:\n%s", n, budget, p)
		}
		if n := len(p) / 4; n > budget {
			t.Errorf("prompt is %d bytes (%d tokens at 4 bytes each), over the %d budget", len(p), n, budget)
		}
	}
}

func TestPromptDeterministic(t *testing.T) {
	if Prompt(Options{}) != Prompt(Options{}) {
		t.Error("Prompt is not deterministic")
	}
}

func TestApproxTokens(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"space only", " \t\n ", 0},
		{"short word", "the", 1},
		{"six letters", "script", 1},
		{"seven letters", "promise", 2},
		{"long word", "internationalization", 4},
		{"words", "call the tool", 3},
		{"punctuation pair", "({", 1},
		{"punctuation run", "...;", 2},
		{"mixed", "a.b(c);", 6},
		{"code", "await tools.x({a: 1})", 9},
		{"digits", "2026", 1},
		{"control characters", "a\x00b", 3},
		{"non-ascii letters", "héllo", 3},
		{"cjk", "日本語", 3},
		{"non-ascii space", "a\u00a0b", 2},
		{"emoji", "ok 👍", 2},
		{"invalid utf8", "\xff\xfe", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ApproxTokens(tt.in); got != tt.want {
				t.Errorf("ApproxTokens(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzApproxTokens(f *testing.F) {
	f.Add("await tools.github.search_issues({query: \"bug\"})")
	f.Add("héllo 日本語 \xff")
	f.Fuzz(func(t *testing.T, s string) {
		n := ApproxTokens(s)
		if n < 0 || n > len(s) {
			t.Fatalf("ApproxTokens(%q) = %d, outside [0, %d]", s, n, len(s))
		}
		if ApproxTokens(s+s) > 2*n {
			t.Fatalf("ApproxTokens is not subadditive for %q", s)
		}
	})
}

func BenchmarkPrompt(b *testing.B) {
	for b.Loop() {
		Prompt(Options{})
	}
}
