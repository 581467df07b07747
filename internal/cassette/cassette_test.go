package cassette

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
)

func readFile(t testing.TB, path string) *Cassette {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := Read(f)
	if err != nil {
		t.Fatalf("Read %s: %v", path, err)
	}
	return c
}

func TestReadWriteRoundTrip(t *testing.T) {
	c := readFile(t, "testdata/tiny.jsonl")
	if len(c.Calls) != 2 || c.Calls[1].Error.Code != "not_found" || c.Request.Seed != 5 {
		t.Fatalf("read %+v", c)
	}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	d, err := Read(&buf)
	if err != nil {
		t.Fatalf("Read after Write: %v", err)
	}
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("round trip differs:\n%+v\n%+v", c, d)
	}
}

func TestReplayTiny(t *testing.T) {
	c := readFile(t, "testdata/tiny.jsonl")
	res, d := replay(t, c, nil)
	if d != nil {
		t.Fatalf("divergence: %v", d)
	}
	if string(res.Result) != `{"limit":2000,"e":"not_found"}` {
		t.Fatalf("result %s", res.Result)
	}
}

func TestReadErrors(t *testing.T) {
	tiny, err := os.ReadFile("testdata/tiny.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(tiny)), "\n")
	head, call1, call2, final := lines[0], lines[1], lines[2], lines[3]
	join := func(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", "the cassette is empty"},
		{"not JSON", "{", "line 1 is not a JSON object"},
		{"starts with a call", join(call1, final), `line 1 has type "call"`},
		{"version", join(strings.Replace(head, `"v":1`, `"v":2`, 1), final), "unsupported cassette version"},
		{"no version", join(strings.Replace(head, `"v":1,`, ``, 1), final), "unsupported cassette version"},
		{"unknown request field", join(strings.Replace(head, `"seed"`, `"sed"`, 1), final), `line 1: unknown field "sed"`},
		{"unknown language", join(strings.Replace(head, `"javascript"`, `"cobol"`, 1), final), `unknown language "cobol"`},
		{"bad limit", join(strings.Replace(head, `"30s"`, `"soon"`, 1), final), `limits.timeout: duration "soon" is invalid`},
		{"duplicate tool", join(strings.Replace(head, `{"name":"get_expenses"}`, `{"name":"get_budget_by_level"}`, 1), final), "defined twice"},
		{"out of order", join(head, call2, call1, final), "line 2: call has seq 2, want 1"},
		{"unknown call field", join(head, strings.Replace(call1, `"tool"`, `"tol"`, 1), final), `line 2: unknown field "tol"`},
		{"result and error", join(head, strings.Replace(call1, `"result"`, `"error":{"code":"x","message":""},"result"`, 1), final), "exactly one of result and error"},
		{"unknown type", join(head, `{"type":"log"}`, final), `line 2 has type "log"`},
		{"empty line", join(head, "", final), "line 2 is empty"},
		{"no result line", join(head, call1, call2), `has no "result" line`},
		{"line after result", join(head, final, call1), "line 3 follows the result line"},
		{"bad kind", join(head, `{"type":"result","error":{"kind":"OOPS","message":"x"}}`), `error.kind "OOPS"`},
		{"trailing data", join(head, final+` 1`), "line 2 is not a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestReadLineLimit(t *testing.T) {
	tiny, _ := os.ReadFile("testdata/tiny.jsonl")
	_, err := read(bytes.NewReader(tiny), 200, MaxCalls)
	if err == nil || !strings.Contains(err.Error(), "line 1 is longer than 200 bytes") {
		t.Fatalf("read: %v", err)
	}
	_, err = read(bytes.NewReader(tiny), MaxLineBytes, 1)
	if err == nil || !strings.Contains(err.Error(), "line 3: more than 1 calls") {
		t.Fatalf("read: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	res := &ptc.Result{Trace: []ptc.ToolCallRecord{{Seq: 1, Tool: "t", OK: true}}}
	cases := []struct {
		name string
		req  ptc.Request
		res  *ptc.Result
		want string
	}{
		{"not deterministic", ptc.Request{Source: "1"}, res, "record a deterministic execution"},
		{"no seed", ptc.Request{Source: "1", Deterministic: true}, res, "explicit seed"},
		{"no results", ptc.Request{Source: "1", Deterministic: true, Seed: 1}, res, "run with IncludeToolResults"},
		{"trace out of order", ptc.Request{Source: "1", Deterministic: true, Seed: 1},
			&ptc.Result{Trace: []ptc.ToolCallRecord{{Seq: 2, Tool: "t"}}}, "not in call order"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.req, nil, "", tc.res); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	tiny, _ := os.ReadFile("testdata/tiny.jsonl")
	f.Add(tiny)
	f.Add([]byte(`{"v":1,"type":"request"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := read(bytes.NewReader(data), 1<<16, 64)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := c.Write(&buf); err != nil {
			t.Fatalf("Write of a read cassette: %v", err)
		}
		if _, err := Read(&buf); err != nil {
			t.Fatalf("a written cassette does not read back: %v\n%s", err, buf.Bytes())
		}
	})
}
