package ptc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ptcrun/ptc"
)

// TestCodeOfKindOf checks the helpers over every shape an error takes:
// a request error has a Code and no Kind, an execution failure a Kind and
// no Code, wrapped or not; nil (a nil Result.Error included) has neither.
func TestCodeOfKindOf(t *testing.T) {
	var noFailure *ptc.ExecutionError
	req := &ptc.Error{Code: ptc.ResourceExhausted, Message: "busy"}
	exe := &ptc.ExecutionError{Kind: ptc.KindTimeout, Message: "slow"}
	cases := []struct {
		name string
		err  error
		code ptc.Code
		kind ptc.ErrorKind
	}{
		{"nil", nil, 0, 0},
		{"nil Result.Error", noFailure, 0, 0},
		{"request error", req, ptc.ResourceExhausted, 0},
		{"wrapped request error", fmt.Errorf("calling ptcd: %w", req), ptc.ResourceExhausted, 0},
		{"execution failure", exe, 0, ptc.KindTimeout},
		{"wrapped execution failure", fmt.Errorf("step 2: %w", exe), 0, ptc.KindTimeout},
		{"another error", errors.New("disk full"), ptc.Unknown, 0},
		{"context", context.Canceled, ptc.Unknown, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ptc.CodeOf(tc.err); got != tc.code {
				t.Errorf("CodeOf = %v, want %v", got, tc.code)
			}
			if got := ptc.KindOf(tc.err); got != tc.kind {
				t.Errorf("KindOf = %v, want %v", got, tc.kind)
			}
		})
	}
	if !errors.Is(req, &ptc.Error{Code: ptc.ResourceExhausted}) || errors.Is(req, &ptc.Error{Code: ptc.Internal}) {
		t.Error("errors.Is over *Error does not compare codes")
	}
	if !errors.Is(exe, &ptc.ExecutionError{Kind: ptc.KindTimeout}) || errors.Is(exe, &ptc.ExecutionError{Kind: ptc.KindScript}) {
		t.Error("errors.Is over *ExecutionError does not compare kinds")
	}
}

// TestErrorsRunnerAndClientAlike runs the same requests through a Runner
// and a Client and requires the same Code and Kind from each.
func TestErrorsRunnerAndClientAlike(t *testing.T) {
	addr, stop := serve()
	defer stop()
	c, err := ptc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := ptc.NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cases := []struct {
		name string
		req  ptc.Request
		code ptc.Code      // of the returned error
		kind ptc.ErrorKind // of res.Error
	}{
		{"refused", ptc.Request{Source: ""}, ptc.InvalidArgument, 0},
		{"syntax", ptc.Request{Source: "return ("}, 0, ptc.KindSyntax},
		{"script", ptc.Request{Source: `throw new Error("no")`}, 0, ptc.KindScript},
		{"output", ptc.Request{Source: `return "x".repeat(4096)`, Limits: ptc.Limits{MaxOutputBytes: 1024}}, 0, ptc.KindOutputLimit},
		{"ok", ptc.Request{Source: "return 1"}, 0, 0},
	}
	execs := map[string]func(context.Context, ptc.Request) (*ptc.Result, error){"Runner": r.Execute, "Client": c.Execute}
	for _, tc := range cases {
		for name, execute := range execs {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				res, err := execute(context.Background(), tc.req)
				if got := ptc.CodeOf(err); got != tc.code {
					t.Fatalf("CodeOf(err) = %v (%v), want %v", got, err, tc.code)
				}
				if err != nil {
					return
				}
				if got := ptc.KindOf(res.Error); got != tc.kind || ptc.CodeOf(res.Error) != 0 {
					t.Fatalf("KindOf(res.Error) = %v, CodeOf %v (%v), want %v and 0", got, ptc.CodeOf(res.Error), res.Error, tc.kind)
				}
			})
		}
	}
}
