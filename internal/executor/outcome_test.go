package executor

import (
	"encoding/json"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/tools"
)

// TestAnswersDigest: the digest of a resume's answers ignores their order
// and tells every other difference apart.
func TestAnswersDigest(t *testing.T) {
	base := []core.Answer{{CallID: "c1", Output: json.RawMessage(`"a"`)}, {CallID: "c2", Approve: true}}
	for _, tc := range []struct {
		name    string
		answers []core.Answer
		same    bool
	}{
		{"same", []core.Answer{{CallID: "c1", Output: json.RawMessage(`"a"`)}, {CallID: "c2", Approve: true}}, true},
		{"reordered", []core.Answer{{CallID: "c2", Approve: true}, {CallID: "c1", Output: json.RawMessage(`"a"`)}}, true},
		{"other whitespace", []core.Answer{{CallID: "c1", Output: json.RawMessage(" \"a\"\n")}, {CallID: "c2", Approve: true}}, true},
		{"other output", []core.Answer{{CallID: "c1", Output: json.RawMessage(`"b"`)}, {CallID: "c2", Approve: true}}, false},
		{"denied", []core.Answer{{CallID: "c1", Output: json.RawMessage(`"a"`)}, {CallID: "c2", Deny: true}}, false},
		{"an error", []core.Answer{{CallID: "c1", Error: &tools.Error{Code: "a"}}, {CallID: "c2", Approve: true}}, false},
		{"one fewer", []core.Answer{{CallID: "c1", Output: json.RawMessage(`"a"`)}}, false},
		{"field boundary", []core.Answer{{CallID: "c1", Error: &tools.Error{Code: "ab", Message: ""}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := answersDigest(tc.answers) == answersDigest(base); got != tc.same {
				t.Fatalf("same digest: %v, want %v", got, tc.same)
			}
		})
	}
	if answersDigest([]core.Answer{{CallID: "c1", Error: &tools.Error{Code: "a", Message: "b"}}}) ==
		answersDigest([]core.Answer{{CallID: "c1", Error: &tools.Error{Code: "ab", Message: ""}}}) {
		t.Fatal("fields run into each other")
	}
}
