package fault

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestBreachAlwaysFillsLimitAndObserved(t *testing.T) {
	for _, tc := range []struct {
		name            string
		limit, observed int64
		wantObserved    int64
	}{
		{"measured", 100, 250, 250},
		{"not measured", 100, 0, 100},
		{"measured below the limit", 100, 40, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Breach(KindMemoryLimit, tc.limit, tc.observed, "held %d", tc.observed)
			if e.Limit != tc.limit || e.Observed != tc.wantObserved {
				t.Fatalf("limit %d observed %d, want %d and %d", e.Limit, e.Observed, tc.limit, tc.wantObserved)
			}
			if e.Kind != KindMemoryLimit || e.Code != CodeOK {
				t.Fatalf("kind %s code %s", e.Kind, e.Code)
			}
		})
	}
}

func TestIsMatchesKindAndCode(t *testing.T) {
	exec := Breach(KindTimeout, 1, 2, "slow")
	req := Reject(CodeInvalidArgument, "bad %s", "id")
	for _, tc := range []struct {
		name   string
		err    error
		target *Error
		want   bool
	}{
		{"kind", exec, &Error{Kind: KindTimeout}, true},
		{"other kind", exec, &Error{Kind: KindCPULimit}, false},
		{"code", req, &Error{Code: CodeInvalidArgument}, true},
		{"other code", req, &Error{Code: CodeUnavailable}, false},
		{"execution error is no request code", exec, &Error{Code: CodeInvalidArgument}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errors.Is(tc.err, tc.target); got != tc.want {
				t.Fatalf("errors.Is = %v, want %v", got, tc.want)
			}
		})
	}
	if req.Error() != "INVALID_ARGUMENT: bad id" {
		t.Fatalf("Error() = %q", req.Error())
	}
}

func TestCodeNames(t *testing.T) {
	for c, want := range map[Code]string{CodeOK: "OK", CodeCanceled: "CANCELLED", CodeUnauthenticated: "UNAUTHENTICATED", 99: "CODE_99"} {
		if c.String() != want {
			t.Errorf("%d: %q, want %q", uint32(c), c.String(), want)
		}
	}
}

func TestFromContext(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Code
	}{
		{context.Canceled, CodeCanceled},
		{context.DeadlineExceeded, CodeDeadlineExceeded},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), CodeDeadlineExceeded},
		{errors.New("something else"), CodeUnknown},
	} {
		e := FromContext(tc.err)
		if e.Code != tc.want || e.Kind != KindUnspecified || !errors.Is(e, tc.err) || e.Message != tc.err.Error() {
			t.Errorf("FromContext(%v) = %+v, want code %v with the error as its cause", tc.err, e, tc.want)
		}
	}
}
