package abi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseBatch(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []BatchCall
		wantErr string
	}{
		{name: "two calls", in: `[{"tool":"a","args":{"x":1}},{"tool":"b"}]`,
			want: []BatchCall{{Tool: "a", Args: json.RawMessage(`{"x":1}`)}, {Tool: "b"}}},
		{name: "null args mean none", in: `[{"tool":"a","args":null}]`, want: []BatchCall{{Tool: "a"}}},
		{name: "empty array", in: ` [ ] `, want: nil},
		{name: "whitespace around", in: "\n[{\"tool\":\"a\"}]\n", want: []BatchCall{{Tool: "a"}}},
		{name: "not JSON", in: `nope`, wantErr: "not JSON"},
		{name: "empty", in: ``, wantErr: "not JSON"},
		{name: "object", in: `{"tool":"a"}`, wantErr: "not a JSON array"},
		{name: "element not an object", in: `[1]`, wantErr: "call 0 is not"},
		{name: "missing tool", in: `[{"args":{}}]`, wantErr: `call 0 has no "tool"`},
		{name: "tool not a string", in: `[{"tool":1}]`, wantErr: "call 0 is not"},
		{name: "unterminated", in: `[{"tool":"a"}`, wantErr: "not a complete"},
		{name: "trailing data", in: `[{"tool":"a"}] []`, wantErr: "data after"},
		{name: "trailing garbage", in: `[]x`, wantErr: "data after"},
		{name: "too many calls", in: "[" + strings.Repeat(`{"tool":"a"},`, MaxBatchCalls) + `{"tool":"a"}]`, wantErr: "more than 1024 calls"},
		{name: "too many bytes", in: "[" + strings.Repeat(" ", MaxBatchBytes) + "]", wantErr: "bytes, more than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBatch([]byte(tc.in))
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidBatch) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidBatch containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d calls, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if got[i].Tool != tc.want[i].Tool || string(got[i].Args) != string(tc.want[i].Args) {
					t.Fatalf("call %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Name: "ToolError", Tool: "t", Code: "not_found", Message: "no such record"}
	if got := e.Error(); got != `ToolError: no such record (tool "t", code not_found)` {
		t.Fatal(got)
	}
}

func FuzzParseBatch(f *testing.F) {
	f.Add([]byte(`[{"tool":"a","args":{"x":1}},{"tool":"b"}]`))
	f.Add([]byte(`[{"tool":"a","args":null}]`))
	f.Add([]byte(`[`))
	f.Add([]byte(`[{"tool":"\u0000"}] `))
	f.Fuzz(func(t *testing.T, data []byte) {
		calls, err := ParseBatch(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("error %v does not wrap ErrInvalidBatch", err)
			}
			return
		}
		if len(calls) > MaxBatchCalls {
			t.Fatalf("%d calls accepted", len(calls))
		}
		// A parsed batch re-encodes to a batch that parses the same.
		if calls == nil {
			calls = []BatchCall{}
		}
		b, err := json.Marshal(calls)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseBatch(b)
		if err != nil || len(again) != len(calls) {
			t.Fatalf("round trip: %v, %d calls, want %d", err, len(again), len(calls))
		}
		for i := range calls {
			if again[i].Tool != calls[i].Tool {
				t.Fatalf("call %d tool %q became %q", i, calls[i].Tool, again[i].Tool)
			}
		}
	})
}
