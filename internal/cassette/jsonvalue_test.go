package cassette

import (
	"strings"
	"testing"
)

func TestEqual(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		want bool
	}{
		{"same bytes", `{"a":1}`, `{"a":1}`, true},
		{"key order and space", `{"a":1,"b":[1,2]}`, `{ "b": [1, 2], "a": 1 }`, true},
		{"number spelling", `[1, 1.0, 1e0, 100]`, `[1.00, 1, 10e-1, 1E2]`, true},
		{"big integers stay exact", `9007199254740993`, `9007199254740992`, false},
		{"different value", `{"a":1}`, `{"a":2}`, false},
		{"missing key", `{"a":1,"b":2}`, `{"a":1}`, false},
		{"array order matters", `[1,2]`, `[2,1]`, false},
		{"null vs missing", `{"a":null}`, `{}`, false},
		{"string vs number", `"1"`, `1`, false},
		{"invalid JSON", `{`, `{`, false},
		{"trailing data", `1 2`, `1`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Equal([]byte(tc.a), []byte(tc.b)); got != tc.want {
				t.Fatalf("Equal(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestContains(t *testing.T) {
	cases := []struct {
		name           string
		value, pattern string
		want           bool
	}{
		{"empty pattern", `{"a":1}`, ``, true},
		{"null pattern", `{"a":1}`, `null`, true},
		{"subset", `{"a":1,"b":"x"}`, `{"b":"x"}`, true},
		{"nested subset", `{"a":{"b":1,"c":2}}`, `{"a":{"c":2}}`, true},
		{"number spelling", `{"n":2}`, `{"n":2.0}`, true},
		{"other value", `{"a":1}`, `{"a":2}`, false},
		{"missing key", `{"a":1}`, `{"b":1}`, false},
		{"arrays must be equal", `{"a":[1,2]}`, `{"a":[1]}`, false},
		{"object pattern on a scalar", `1`, `{"a":1}`, false},
		{"invalid pattern", `{}`, `{`, false},
		{"invalid value", `{`, `{"a":1}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Contains([]byte(tc.value), []byte(tc.pattern)); got != tc.want {
				t.Fatalf("Contains(%s, %s) = %v, want %v", tc.value, tc.pattern, got, tc.want)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	cases := []struct {
		name      string
		want, got string
		max       int
		lines     []string
	}{
		{"equal", `{"a":1}`, `{"a":1.0}`, 5, nil},
		{"changed field", `{"q":"Q3","n":1}`, `{"q":"Q2","n":1}`, 5, []string{`/q: "Q3" → "Q2"`}},
		{"added and removed", `{"a":1}`, `{"b":2}`, 5, []string{`/a: 1 → missing`, `/b: missing → 2`}},
		{"array element", `[1,{"x":true}]`, `[1,{"x":false},3]`, 5, []string{`/1/x: true → false`, `/2: missing → 3`}},
		{"root", `1`, `"1"`, 5, []string{`(root): 1 → "1"`}},
		{"pointer escaping", `{"a/b~":1}`, `{"a/b~":2}`, 5, []string{`/a~1b~0: 1 → 2`}},
		{"capped", `[1,2,3,4]`, `[5,6,7,8]`, 2, []string{`/0: 1 → 5`, `/1: 2 → 6`, `… and 2 more differences`}},
		{"invalid recorded side", `{`, `1`, 5, []string{"the recorded side is not valid JSON: unexpected EOF"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff([]byte(tc.want), []byte(tc.got), tc.max)
			if strings.Join(got, "\n") != strings.Join(tc.lines, "\n") {
				t.Fatalf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.lines, "\n"))
			}
		})
	}
}

func TestCompact(t *testing.T) {
	if got := Compact([]byte("{ \"a\" : [1, 2] }"), 100); got != `{"a":[1,2]}` {
		t.Fatalf("Compact = %s", got)
	}
	if got := Compact([]byte(`"ééééé"`), 4); got != `"é…` {
		t.Fatalf("Compact shortens on a rune boundary, got %q", got)
	}
}

func FuzzEqualDiff(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":null}]}`), []byte(`{"a":[1,3]}`))
	f.Add([]byte(`1e400`), []byte(`"x"`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		eq := Equal(a, b)
		d := Diff(a, b, 5)
		if eq && len(d) != 0 {
			t.Fatalf("Equal but Diff = %v", d)
		}
		if Equal(a, a) != Equal(a, a) || (Equal(a, b) != Equal(b, a)) {
			t.Fatal("Equal is not symmetric")
		}
		_ = Contains(a, b)
	})
}

func TestEqualHugeExponent(t *testing.T) {
	// Exact comparison would build a number with a billion digits.
	if Equal([]byte(`1e1000000000`), []byte(`10e999999999`)) {
		t.Fatal("numbers out of float range compare unequal")
	}
	if !Equal([]byte(`1e300`), []byte(`10e299`)) {
		t.Fatal("1e300 == 10e299")
	}
}
