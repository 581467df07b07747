package plural

import "testing"

func TestCount(t *testing.T) {
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"zero is plural", Count(0, "tool call", "tool calls"), "0 tool calls"},
		{"one is singular", Count(1, "tool call", "tool calls"), "1 tool call"},
		{"two is plural", Count(2, "tool call", "tool calls"), "2 tool calls"},
		{"int64", Count(int64(1), "byte", "bytes"), "1 byte"},
		{"int32", Count(int32(26), "tool call", "tool calls"), "26 tool calls"},
		{"irregular", Count(3, "entry", "entries"), "3 entries"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}
