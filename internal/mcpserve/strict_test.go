package mcpserve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestDuplicateNames: a member named twice in one object, at any depth
// and however its name is escaped (or mangled: names a decoder reads
// alike are one), is found, in small objects and large; the same name in
// different objects, or text in strings, is not a duplicate; text the
// scan cannot follow counts as ambiguous.
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
		{"brackets in strings", `{"x":"}]{","y":"\"","z":{"x":1}}`, false},
		{"a comma in a name", `{"a,b":1,"a":2,"b":3}`, false},
		{"many names", `{` + manyNames(100, "") + `}`, false},
		{"many names, one twice", `{` + manyNames(100, `,"k7":0`) + `}`, true},
		{"escaped quotes twice", `{"a\"":1,"a\"":2}`, true},
		{"invalid UTF-8 names that decode alike", "{\"a\xff\":1,\"a\xfe\":2}", true},
		{"unpaired surrogates that decode alike", `{"\ud800":1,"\udc00":2}`, true},
		{"unterminated", `{"a":`, true},
		{"unbalanced", `{"a":[1}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := duplicateNames([]byte(tc.text)); got != tc.dup {
				t.Fatalf("duplicateNames(%s) = %v, want %v", tc.text, got, tc.dup)
			}
		})
	}
}

// manyNames is n members "k0" to "k<n-1>", then tail.
func manyNames(n int, tail string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	return b.String() + tail
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

// referenceDuplicates is duplicateNames written plainly over
// encoding/json's tokens (valid JSON only).
func referenceDuplicates(data []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	type frame struct {
		names   map[string]bool
		wantKey bool
	}
	var stack []*frame
	ended := func() {
		if n := len(stack); n > 0 && stack[n-1].names != nil {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := len(stack) - 1
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &frame{names: map[string]bool{}, wantKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:top]
				ended()
			}
			continue
		}
		if top >= 0 && stack[top].names != nil && stack[top].wantKey {
			k := tok.(string)
			if stack[top].names[k] {
				return true
			}
			stack[top].names[k], stack[top].wantKey = true, false
			continue
		}
		ended()
	}
}

// FuzzDuplicateNames: on valid JSON the byte scan agrees with a plain
// reading of the tokens.
func FuzzDuplicateNames(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `[{"a":1},{"a":2}]`, `{"a":{"b":[1,{"c":2,"c":3}]}}`, `{"\u0061":1,"a":2}`, `{"x":"}","y":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if got, want := duplicateNames(data), referenceDuplicates(data); got != want {
			t.Fatalf("duplicateNames(%q) = %v, the tokens say %v", data, got, want)
		}
	})
}

// BenchmarkDuplicateNames scans an 8.5 MB tools/call body of 500,000
// small objects, as the HTTP handler does for every request.
func BenchmarkDuplicateNames(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute","arguments":{"code":"return 1","input":[`)
	for i := range 500000 {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"a":1,"b":"xy"}`)
	}
	sb.WriteString(`]}}}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if duplicateNames(body) {
			b.Fatal("a duplicate in a clean body")
		}
	}
}

// TestBatchLen: a batch's messages are counted at its top level, whatever
// they hold; a body that is not an array counts 0.
func TestBatchLen(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0},
		{`[]`, 0},
		{` [ ] `, 0},
		{`[{"id":1}]`, 1},
		{`[{"id":1},{"id":2}]`, 2},
		{`[{"a":[1,2,{"b":","}]},"x,y",3,[4,5]]`, 4},
		{`[{"s":"\"],[,"},{"t":"\\"}]`, 2},
		{"[\n  {\"id\":1} ,\n  {\"id\":2}\n]", 2},
		{`[{"id":1},`, 2}, // malformed: counted as far as it goes
	} {
		if got := batchLen([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.body, got, tc.want)
		}
	}
}
