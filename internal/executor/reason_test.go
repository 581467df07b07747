package executor

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCutReason: a reason over MaxReasonBytes is cut to at most that many
// bytes, on a character boundary, ending with "…"; one within it is kept.
func TestCutReason(t *testing.T) {
	cases := []struct {
		name, in string
		cut      bool
	}{
		{"empty", "", false},
		{"short", "not during the audit", false},
		{"exactly the bound", strings.Repeat("r", MaxReasonBytes), false},
		{"one byte over", strings.Repeat("r", MaxReasonBytes+1), true},
		{"two-byte characters", strings.Repeat("é", 3000), true},
		{"four-byte characters", strings.Repeat("😀", 1100), true},
		{"a character across the bound", strings.Repeat("r", MaxReasonBytes-4) + "😀😀", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CutReason(tc.in)
			if !tc.cut {
				if got != tc.in {
					t.Fatalf("cut a reason within the bound to %q", got)
				}
				return
			}
			if len(got) > MaxReasonBytes || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) ||
				!strings.HasPrefix(tc.in, strings.TrimSuffix(got, "…")) || len(got) < MaxReasonBytes-6 {
				t.Fatalf("cut to %d bytes (valid UTF-8 %v), ending %q", len(got), utf8.ValidString(got), got[max(0, len(got)-8):])
			}
		})
	}
}
