package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/limits"
)

func TestLogBufferCaps(t *testing.T) {
	const o = limits.LogEntryOverhead
	cases := []struct {
		name      string
		lim       limits.Limits
		writes    []string
		kept      []string
		truncated bool
	}{
		{"within the cap", limits.Limits{MaxLogBytes: 100}, []string{"a", "bc"}, []string{"a", "bc"}, false},
		{"each entry costs its overhead", limits.Limits{MaxLogBytes: 2*o + 2}, []string{"a", "b", "c"}, []string{"a", "b"}, true},
		{"empty entries are not free", limits.Limits{MaxLogBytes: 3 * o}, []string{"", "", "", "", ""}, []string{"", "", ""}, true},
		{"a long line is cut at the cap", limits.Limits{MaxLogBytes: o + 4}, []string{"abcdefgh", "x"}, []string{"abcd"}, true},
		{"a cut never splits a character", limits.Limits{MaxLogBytes: o + 4}, []string{"abcé"}, []string{"abc"}, true},
		{"no room for the overhead drops the entry", limits.Limits{MaxLogBytes: o + 2}, []string{"ab", "c"}, []string{"ab"}, true},
		{"at most max_log_entries entries", limits.Limits{MaxLogEntries: 2}, []string{"a", "b", "c"}, []string{"a", "b"}, true},
		{"the first cap reached truncates", limits.Limits{MaxLogBytes: 100 * o, MaxLogEntries: 3}, []string{"", "", "", ""}, []string{"", "", ""}, true},
		{"zero means no limit", limits.Limits{}, []string{"", strings.Repeat("x", 1<<20)}, []string{"", strings.Repeat("x", 1<<20)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var live []string
			b := NewLogBuffer(time.Now(), tc.lim, func(e core.LogEntry) { live = append(live, e.Message) })
			for _, w := range tc.writes {
				b.Write("log", w)
			}
			entries, truncated := b.Entries()
			var got []string
			for _, e := range entries {
				got = append(got, e.Message)
			}
			if strings.Join(got, "|") != strings.Join(tc.kept, "|") || len(got) != len(tc.kept) || truncated != tc.truncated {
				t.Fatalf("kept %q truncated %v, want %q %v", got, truncated, tc.kept, tc.truncated)
			}
			if strings.Join(live, "|") != strings.Join(tc.kept, "|") {
				t.Fatalf("live %q", live)
			}
			if b.Full() != tc.truncated {
				t.Fatalf("Full %v", b.Full())
			}
		})
	}
}

// TestLogBufferBoundedWhateverIsWritten: a flood of entries — empty ones
// included — never holds more than the cap.
func TestLogBufferBoundedWhateverIsWritten(t *testing.T) {
	lim := limits.Limits{MaxLogBytes: 64 << 10}
	b := NewLogBuffer(time.Now(), lim, nil)
	for i := 0; i < 1_000_000; i++ {
		b.Write("log", "")
	}
	entries, truncated := b.Entries()
	if max := int(lim.MaxLogBytes / limits.LogEntryOverhead); len(entries) > max || !truncated {
		t.Fatalf("%d entries kept (at most %d), truncated %v", len(entries), max, truncated)
	}
}

func TestLogBufferTruncate(t *testing.T) {
	b := NewLogBuffer(time.Now(), limits.Limits{}, nil)
	b.Write("log", "a")
	b.Truncate()
	if b.Write("log", "b") || !b.Full() {
		t.Fatal("written after Truncate")
	}
	if e, tr := b.Entries(); len(e) != 1 || !tr || b.Bytes() != 1 {
		t.Fatalf("%v %v %d", e, tr, b.Bytes())
	}
	var nilBuf *LogBuffer
	if nilBuf.Write("log", "x") || !nilBuf.Full() || nilBuf.Bytes() != 0 {
		t.Fatal("nil buffer")
	}
	nilBuf.Truncate()
}
