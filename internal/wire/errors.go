package wire

import (
	"errors"
	"math"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ptcrun/ptc/internal/fault"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// ErrorPB converts an execution failure; nil stays nil.
func ErrorPB(e *fault.Error) *ptcv1.ExecutionError {
	if e == nil {
		return nil
	}
	return &ptcv1.ExecutionError{
		Kind:     ptcv1.ErrorKind(e.Kind),
		Message:  text(e.Message),
		Line:     clamp32(e.Line),
		Column:   clamp32(e.Column),
		Stack:    text(e.Stack),
		Tool:     text(e.Tool),
		Limit:    e.Limit,
		Observed: e.Observed,
	}
}

// ErrorFromPB converts an execution failure; nil stays nil.
func ErrorFromPB(e *ptcv1.ExecutionError) *fault.Error {
	if e == nil {
		return nil
	}
	return &fault.Error{
		Kind:     fault.Kind(e.GetKind()),
		Message:  e.GetMessage(),
		Line:     int(e.GetLine()),
		Column:   int(e.GetColumn()),
		Stack:    e.GetStack(),
		Tool:     e.GetTool(),
		Limit:    e.GetLimit(),
		Observed: e.GetObserved(),
	}
}

// Status converts a request error to a gRPC status error: the code, the
// message and, when RetryAfter is set, a google.rpc.RetryInfo detail; when
// Reason is set, a google.rpc.ErrorInfo detail (domain "ptc.v1"). An
// error that is not a *fault.Error is INTERNAL with a generic message.
func Status(err error) error {
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Code == fault.CodeOK {
		return status.Error(codes.Internal, "internal error")
	}
	st := status.New(codes.Code(fe.Code), fe.Message)
	if fe.RetryAfter > 0 {
		if d, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(fe.RetryAfter)}); derr == nil {
			st = d
		}
	}
	if fe.Reason != "" {
		if d, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: fe.Reason, Domain: fault.ReasonDomain}); derr == nil {
			st = d
		}
	}
	return st.Err()
}

// ErrorFromStatus converts an RPC's error back into a request error: the
// status code and message, RetryAfter from a RetryInfo detail, Reason
// from a ptc ErrorInfo detail, and the
// original error as the cause. A context error (the caller's own deadline
// or cancel) keeps it as the cause, so errors.Is(err, context.Canceled)
// holds.
func ErrorFromStatus(err error) *fault.Error {
	if err == nil {
		return nil
	}
	var fe *fault.Error
	if errors.As(err, &fe) && fe.Code != fault.CodeOK {
		return fe
	}
	st, ok := status.FromError(err)
	if !ok {
		st = status.FromContextError(err)
	}
	out := &fault.Error{Code: fault.Code(st.Code()), Message: st.Message(), Cause: err}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			out.RetryAfter = d.GetRetryDelay().AsDuration()
		case *errdetails.ErrorInfo:
			if d.GetDomain() == fault.ReasonDomain {
				out.Reason = d.GetReason()
			}
		}
	}
	return out
}

// clamp32 converts an int to int32, saturating instead of wrapping.
func clamp32(v int) int32 {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32
	case v < math.MinInt32:
		return math.MinInt32
	}
	return int32(v)
}
