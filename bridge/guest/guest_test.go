package ptc

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/ptcrun/ptc/internal/abi"
)

// fakeHost answers calls from a table, as the ptc_v1 host would.
type fakeHost struct {
	status  int32
	payload string
	batch   func(req []abi.BatchCall) (int32, string)
	gotName string
	gotArgs string
}

func (h *fakeHost) call(name string, args []byte) (int32, []byte) {
	h.gotName, h.gotArgs = name, string(args)
	return h.status, []byte(h.payload)
}

func (h *fakeHost) callBatch(req []byte) (int32, []byte) {
	calls, err := abi.ParseBatch(req)
	if err != nil {
		b, _ := json.Marshal(&Error{Name: abi.NameArgumentError, Code: abi.CodeInvalidBatch, Message: err.Error()})
		return abi.StatusError, b
	}
	s, p := h.batch(calls)
	return s, []byte(p)
}

func TestCall(t *testing.T) {
	cases := []struct {
		name     string
		host     fakeHost
		args     any
		wantArgs string
		wantOut  string
		wantCode string
	}{
		{name: "result decoded", host: fakeHost{payload: `{"n":2}`}, args: map[string]int{"n": 1}, wantArgs: `{"n":1}`, wantOut: `2`},
		{name: "nil args send nothing", host: fakeHost{payload: `{"n":3}`}, wantArgs: ``, wantOut: `3`},
		{name: "raw args pass through", host: fakeHost{payload: `{"n":4}`}, args: json.RawMessage(`{"raw":true}`), wantArgs: `{"raw":true}`, wantOut: `4`},
		{name: "tool error", host: fakeHost{status: abi.StatusError, payload: `{"name":"ToolError","tool":"t","code":"not_found","message":"gone"}`}, wantCode: "not_found"},
		{name: "malformed error", host: fakeHost{status: abi.StatusError, payload: `{`}, wantCode: abi.CodeToolFailed},
		{name: "error without code", host: fakeHost{status: abi.StatusError, payload: `{}`}, wantCode: abi.CodeToolFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.host
			var out struct{ N int }
			err := client{&h}.callDecode("t", tc.args, &out)
			if h.gotName != "t" || h.gotArgs != tc.wantArgs {
				t.Fatalf("host got %q %q, want t %q", h.gotName, h.gotArgs, tc.wantArgs)
			}
			if tc.wantCode != "" {
				var e *Error
				if !errors.As(err, &e) || e.Code != tc.wantCode {
					t.Fatalf("err = %v, want code %s", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(out.N); string(got) != tc.wantOut {
				t.Fatalf("out = %s, want %s", got, tc.wantOut)
			}
		})
	}

	t.Run("unknown status", func(t *testing.T) {
		if _, err := (client{&fakeHost{status: 9}}).callRaw("t", nil); err == nil {
			t.Fatal("no error for status 9")
		}
	})
	t.Run("unmarshalable args", func(t *testing.T) {
		if err := (client{&fakeHost{}}).callDecode("t", func() {}, nil); err == nil {
			t.Fatal("no error for a func argument")
		}
	})
	t.Run("bad result", func(t *testing.T) {
		var n int
		if err := (client{&fakeHost{payload: `"x"`}}).callDecode("t", nil, &n); err == nil {
			t.Fatal("no error decoding a string into an int")
		}
	})
}

func TestCallAll(t *testing.T) {
	echo := func(calls []abi.BatchCall) (int32, string) {
		res := make([]batchResult, len(calls))
		for i, c := range calls {
			if c.Tool == "fail" {
				res[i] = batchResult{Error: &Error{Name: "ToolError", Tool: "fail", Code: "boom", Message: "failed"}}
				continue
			}
			args := c.Args
			if args == nil {
				args = json.RawMessage(`{}`)
			}
			res[i] = batchResult{OK: true, Result: args}
		}
		b, _ := json.Marshal(res)
		return abi.StatusOK, string(b)
	}
	cases := []struct {
		name  string
		batch func([]abi.BatchCall) (int32, string)
		reqs  []Request
		want  []string // result JSON or "error:<code>"
	}{
		{"results in order", echo, []Request{{Tool: "a", Args: map[string]int{"i": 0}}, {Tool: "fail"}, {Tool: "b"}},
			[]string{`{"i":0}`, "error:boom", `{}`}},
		{"no requests", echo, nil, nil},
		{"batch refused", func([]abi.BatchCall) (int32, string) {
			return abi.StatusError, `{"name":"ToolArgumentError","code":"invalid_batch","message":"too big"}`
		}, []Request{{Tool: "a"}, {Tool: "b"}}, []string{"error:invalid_batch", "error:invalid_batch"}},
		{"wrong result count", func([]abi.BatchCall) (int32, string) { return abi.StatusOK, `[]` },
			[]Request{{Tool: "a"}}, []string{"error:" + abi.CodeToolFailed}},
		{"result with neither", func([]abi.BatchCall) (int32, string) { return abi.StatusOK, `[{"ok":false}]` },
			[]Request{{Tool: "a"}}, []string{"error:" + abi.CodeToolFailed}},
		{"unmarshalable args", echo, []Request{{Tool: "a", Args: make(chan int)}}, []string{"error:invalid_arguments"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := client{&fakeHost{batch: tc.batch}}.callAll(tc.reqs)
			if len(got) != len(tc.want) {
				t.Fatalf("%d responses, want %d", len(got), len(tc.want))
			}
			for i, r := range got {
				s := string(r.Result)
				if r.Err != nil {
					s = "error:" + r.Err.Code
				}
				if s != tc.want[i] {
					t.Fatalf("response %d = %s, want %s", i, s, tc.want[i])
				}
			}
		})
	}
}

func TestResponseDecode(t *testing.T) {
	var v map[string]int
	if err := (Response{Result: json.RawMessage(`{"a":1}`)}).Decode(&v); err != nil || v["a"] != 1 {
		t.Fatalf("decode = %v, %v", v, err)
	}
	e := &Error{Code: "x"}
	if err := (Response{Err: e}).Decode(&v); err != e {
		t.Fatalf("err = %v, want the response's error", err)
	}
}

func TestUnsupportedHost(t *testing.T) {
	err := Call("t", nil, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != "unsupported" {
		t.Fatalf("err = %v, want code unsupported outside wasip1", err)
	}
	if r := CallAll([]Request{{Tool: "t"}}); r[0].Err == nil || r[0].Err.Code != "unsupported" {
		t.Fatalf("CallAll = %+v", r)
	}
}
