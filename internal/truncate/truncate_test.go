package truncate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ptcrun/ptc/internal/prompt"
)

func TestFit(t *testing.T) {
	nums := make([]int, 100)
	for i := range nums {
		nums[i] = i
	}
	hundred, _ := json.Marshal(nums)
	cases := []struct {
		name     string
		in       string
		max      int
		want     string
		dropped  int64
		cut      int64
		tooLarge bool
	}{
		{"fits", `{"a":[1,2,3]}`, 100, `{"a":[1,2,3]}`, 0, 0, false},
		{"array shortened", string(hundred), 40, `[0,1,2,3,4,"[truncated: 95 more items]"]`, 95, 0, false},
		{"nested arrays", `{"users":[{"id":1,"tags":["a","b"]},{"id":2,"tags":["c"]},{"id":3,"tags":[]}],"total":3}`, 80,
			`{"users":[{"id":1,"tags":["a","b"]},"[truncated: 2 more items]"],"total":3}`, 2, 0, false},
		{"long string", `"` + strings.Repeat("x", 100) + `"`, 50, `"xxxxxxxxxxxxxxxxxxx…[truncated: 81 more bytes]"`, 0, 1, false},
		{"escapes stay whole", `"\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"`, 40, `"\n\n\n\n…[truncated: 52 more bytes]"`, 0, 1, false},
		{"surrogate pair stays whole", `"\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00"`, 46, `"\ud83d\ude00…[truncated: 48 more bytes]"`, 0, 1, false},
		{"utf-8 stays whole", `"` + strings.Repeat("é", 40) + `"`, 42, `"ééééé…[truncated: 70 more bytes]"`, 0, 1, false},
		{"object shares the budget", `{"small":1,"a":"` + strings.Repeat("a", 60) + `","b":"` + strings.Repeat("b", 60) + `"}`, 110,
			`{"small":1,"a":"aaaaaaaaaaaaa…[truncated: 47 more bytes]","b":"bbbbbbbbbbbbb…[truncated: 47 more bytes]"}`, 0, 2, false},
		{"object drops keys", `{"a":11111111111,"b":22222222222,"c":33333333333,"d":44444444444}`, 50,
			`{"a":11111111111,"[truncated]":"3 more keys"}`, 3, 0, false},
		{"first item cut when none fits", `["` + strings.Repeat("z", 200) + `", 1]`, 80,
			`["zzzzzzzzzzzzzzzzzz…[truncated: 182 more bytes]","[truncated: 1 more items]"]`, 1, 1, false},
		{"number cannot be cut", `123456789012345`, 10, ``, 0, 0, true},
		{"marker larger than cap", string(hundred), 10, ``, 0, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, rep, err := Fit([]byte(tc.in), tc.max, 0, nil)
			if tc.tooLarge {
				var tl *TooLargeError
				if !errors.As(err, &tl) || tl.SmallestBytes <= tc.max {
					t.Fatalf("err %v, want TooLargeError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("got  %s\nwant %s", out, tc.want)
			}
			if len(out) > tc.max || !json.Valid(out) {
				t.Errorf("%d bytes (max %d), valid %v", len(out), tc.max, json.Valid(out))
			}
			if rep.DroppedItems != tc.dropped || rep.CutStrings != tc.cut || rep.Truncated != (tc.in != tc.want) {
				t.Errorf("report %+v", rep)
			}
		})
	}
}

func TestFitTokens(t *testing.T) {
	words := make([]string, 500)
	for i := range words {
		words[i] = "lorem ipsum dolor sit amet"
	}
	in, _ := json.Marshal(map[string]any{"summary": "ok", "lines": words})
	out, rep, err := Fit(in, 1<<20, 300, prompt.ApproxTokens)
	if err != nil {
		t.Fatal(err)
	}
	if n := prompt.ApproxTokens(string(out)); n > 300 || n < 200 || !json.Valid(out) || !rep.Truncated {
		t.Fatalf("%d tokens, %+v: %s", n, rep, out)
	}
	if !strings.HasPrefix(string(out), `{"lines":["lorem ipsum dolor sit amet",`) || !strings.Contains(string(out), `"summary":"ok"`) {
		t.Fatalf("out %s", out)
	}
	// A budget below the smallest form in tokens.
	_, _, err = Fit(in, 1<<20, 3, prompt.ApproxTokens)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.SmallestTokens <= 3 {
		t.Fatalf("err %v", err)
	}
}

func FuzzFit(f *testing.F) {
	for _, s := range []string{`[1,2,3]`, `{"a":"bcd","e":[{"f":null}]}`, `"\u00e9\ud83d\ude00x"`, `[[[[["deep"]]]]]`, `{"":""}`} {
		f.Add([]byte(s), 20)
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if !json.Valid(in) || max <= 0 || max > 1<<16 {
			return
		}
		out, rep, err := Fit(in, max, 0, nil)
		if err != nil {
			var tl *TooLargeError
			if !errors.As(err, &tl) || tl.SmallestBytes <= max {
				t.Fatalf("Fit(%q, %d): %v", in, max, err)
			}
			return
		}
		if !json.Valid(out) || len(out) > max && rep.Truncated || !utf8.Valid(out) && utf8.Valid(in) {
			t.Fatalf("Fit(%q, %d) = %q (%+v)", in, max, out, rep)
		}
		if !rep.Truncated && len(out) > max {
			t.Fatalf("Fit(%q, %d) = %q untruncated over the budget", in, max, out)
		}
	})
}
