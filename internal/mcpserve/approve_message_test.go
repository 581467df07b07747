package mcpserve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
)

// TestApprovalMessage: long arguments are cut with a clear note, their
// full size and the SHA-256 of the full arguments JSON; characters a
// reader could not see, or that reorder the text, are escaped.
func TestApprovalMessage(t *testing.T) {
	long := json.RawMessage(`{"message":"` + strings.Repeat("a", 1500) + `","to":"evil@example.com"}`)
	sum := sha256.Sum256(long)
	tests := []struct {
		name       string
		action     core.Action
		want, deny []string
	}{
		{"short", core.Action{Tool: "send", Arguments: json.RawMessage(`{"to":"x"}`), Reason: "it sends mail"},
			[]string{`call send with {"to":"x"}.`, "Approval is required: it sends mail."}, []string{"cut", "SHA-256"}},
		{"cut", core.Action{Tool: "send", Arguments: long},
			[]string{"arguments of " + strconv.Itoa(len(long)) + " bytes, too long to show in full", "the first 1000 bytes are shown",
				"SHA-256 of the full arguments JSON: " + hex.EncodeToString(sum[:]), `[cut].`},
			[]string{"evil@example.com", "…"}},
		{"bidi and controls", core.Action{Tool: "pay\u202e", Arguments: json.RawMessage("{\"to\":\"alice\u202e\u2066moc.live\u200b\u2028\x7f\U000e0041\"}"), Reason: "r\u202d"},
			[]string{`pay\u202e`, `"alice\u202e\u2066moc.live\u200b\u2028\u007f\udb40\udc41"`, `r\u202d`}, []string{"\u202e", "\u2066", "\u200b", "\u2028", "\x7f", "\U000e0041", "\u202d"}},
		{"invalid utf-8", core.Action{Tool: "t", Arguments: json.RawMessage("\"\xff\"")},
			[]string{`"\ufffd"`}, []string{"\xff"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := approvalMessage(tc.action)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			for _, d := range tc.deny {
				if strings.Contains(msg, d) {
					t.Errorf("message has %q:\n%s", d, msg)
				}
			}
		})
	}
}

// TestApprovalSchemaDefaultsToDeny: a form submitted untouched does not
// approve.
func TestApprovalSchemaDefaultsToDeny(t *testing.T) {
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(approvalSchema, &s); err != nil {
		t.Fatal(err)
	}
	if d, ok := s.Properties["approve"]["default"]; ok && d != false {
		t.Fatalf("approve defaults to %v", d)
	}
}
