package mcpserve

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDuplicateNames: a member named twice in one object, at any depth
// and however its name is escaped, is found; the same name in different
// objects is not a duplicate; text that is not JSON counts as ambiguous.
func TestDuplicateNames(t *testing.T) {
	cases := []struct {
		name, text string
		dup        bool
	}{
		{"none", `{"action":"accept","content":{"approve":true}}`, false},
		{"same name in sibling objects", `[{"a":1},{"a":2}]`, false},
		{"same name at two depths", `{"a":{"a":{"a":1}}}`, false},
		{"empty object and array", `{"a":{},"b":[],"c":[{}]}`, false},
		{"scalars", `true`, false},
		{"top level", `{"action":"decline","action":"accept"}`, true},
		{"nested", `{"action":"accept","content":{"approve":false,"approve":true}}`, true},
		{"after a nested object", `{"content":{"x":1},"content":{"approve":true}}`, true},
		{"in an array", `[1,{"a":1,"b":[2],"a":2}]`, true},
		{"escaped the same", `{"approve":false,"appr\u006fve":true}`, true},
		{"equal values", `{"a":1,"a":1}`, true},
		{"not JSON", `{"a":`, true},
		{"trailing garbage", `{"a":1} x`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := duplicateNames([]byte(tc.text)); got != tc.dup {
				t.Fatalf("duplicateNames(%s) = %v, want %v", tc.text, got, tc.dup)
			}
		})
	}
}

// TestScreenBody: in an HTTP body, an answer naming a member twice is
// replaced by an error answer to its id, in a batch too; a request doing
// so refuses the body; anything else passes unchanged.
func TestScreenBody(t *testing.T) {
	cases := []struct {
		name, body string
		refuse     bool
		want       string // a substring of the body passed on; "" = unchanged
	}{
		{"a clean answer", `{"jsonrpc":"2.0","id":3,"result":{"action":"accept","content":{"approve":true}}}`, false, ""},
		{"a clean request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute"}}`, false, ""},
		{"not JSON", `{"jsonrpc":`, false, ""},
		{"an ambiguous answer", `{"jsonrpc":"2.0","id":3,"result":{"action":"accept","content":{"approve":false,"approve":true}}}`, false, `"id":3`},
		{"two results", `{"jsonrpc":"2.0","id":"q","result":{"action":"decline"},"result":{"action":"accept","content":{"approve":true}}}`, false, `"id":"q"`},
		{"in a batch", `[{"jsonrpc":"2.0","id":3,"result":{"a":1,"a":2}},{"jsonrpc":"2.0","id":4,"result":{}}]`, false, `"code":-32001`},
		{"an ambiguous request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute","name":"search"}}`, true, ""},
		{"a request in a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}]`, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, refuse := screenBody([]byte(tc.body))
			if refuse != tc.refuse {
				t.Fatalf("refuse = %v, want %v", refuse, tc.refuse)
			}
			switch {
			case tc.refuse:
			case tc.want == "" && string(out) != tc.body:
				t.Fatalf("changed to %s", out)
			case tc.want != "" && (!strings.Contains(string(out), tc.want) || !strings.Contains(string(out), `"code":-32001`) || duplicateNames(out) || !json.Valid(out)):
				t.Fatalf("passed on %s, want an error answer with %s", out, tc.want)
			}
		})
	}
}
