package ptc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ConnectionLostError is a Client call whose connection to the server
// ended after the execution was sent and before its result arrived: the
// server went away (crashed, was killed, the network failed) or closed
// the stream without a result. The outcome is unknown — the script may
// have run, its tools' side effects included — so do not retry it as one
// retries an Unavailable that never reached the server. ExecutionID names
// the execution: ptcd keeps outcomes by it (docs/clients.md, "Retrying
// after a lost connection"), so a retry of the same request with
// Request.ExecutionID set to it gets the outcome instead of running again
// while that server still holds it. Find it with errors.As; its Unwrap is
// the request error (CodeOf: Unavailable, Internal or Unknown).
type ConnectionLostError struct {
	// ExecutionID is the id of the execution whose outcome is unknown:
	// the request's, or the one the Client made up for it.
	ExecutionID string
	// StartedCalls are the tool calls known to have started, in Seq
	// order, each as its latest progress event (Finished and Outcome set
	// when its end was heard, and then its effects happened): a Run's,
	// from the server's progress; always empty for Execute, whose unary
	// call streams nothing back.
	StartedCalls []ProgressEvent
	// PendingCalls counts the client tool calls still being served when
	// the connection ended (Run); their handlers' contexts are cancelled.
	PendingCalls int
	// Err is the request error the call ended with.
	Err *Error
}

// Error implements the error interface.
func (e *ConnectionLostError) Error() string {
	var calls strings.Builder
	for i, c := range e.StartedCalls {
		if i == 0 {
			calls.WriteString("; tool calls known to have started:")
		} else {
			calls.WriteString(",")
		}
		fmt.Fprintf(&calls, " #%d %s", c.Seq, c.Tool)
		if c.Finished {
			fmt.Fprintf(&calls, " (finished: %s)", c.Outcome)
		}
	}
	return fmt.Sprintf("ptc: the connection to the server was lost before execution %s ended (%v); its outcome is unknown: retry with the same execution id to get it from the server that ran it, without running it again%s",
		e.ExecutionID, e.Err, calls.String())
}

// Unwrap returns the request error.
func (e *ConnectionLostError) Unwrap() error { return e.Err }

// lostCodes are the status codes of a connection that ended under a call.
func lostCode(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.Internal, codes.Unknown:
		return true
	}
	return false
}

// newExecutionID returns a fresh random execution id, as the TypeScript
// and Python clients make them.
func newExecutionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "ptc-" + hex.EncodeToString(b[:])
}

// lostError is the error of a call that failed with err: a
// *ConnectionLostError when the execution may have started (reached) and
// err is a lost connection's, not the caller's context ending; the
// request error otherwise.
func lostError(ctx context.Context, err error, reached bool, id string, heard *startedCalls) error {
	e := remoteError(ctx, err)
	if !reached || ctx.Err() != nil || !lostCode(err) {
		return e
	}
	return heard.lost(id, e.(*Error))
}

// startedCalls follows a Run's tool calls from the server's progress and
// counts the client tool calls being served. The zero value is ready;
// nil is one that heard nothing.
type startedCalls struct {
	mu      sync.Mutex
	calls   map[int32]ProgressEvent
	pending int
}

// heard records a progress event.
func (s *startedCalls) heard(ev ProgressEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[int32]ProgressEvent{}
	}
	s.calls[ev.Seq] = ev
}

// serving counts a client tool call being served (+1) or answered (-1).
func (s *startedCalls) serving(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending += d
}

// lost is the ConnectionLostError of execution id with what s heard.
func (s *startedCalls) lost(id string, e *Error) *ConnectionLostError {
	out := &ConnectionLostError{ExecutionID: id, Err: e}
	if s == nil {
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.calls {
		out.StartedCalls = append(out.StartedCalls, ev)
	}
	slices.SortFunc(out.StartedCalls, func(a, b ProgressEvent) int { return int(a.Seq - b.Seq) })
	out.PendingCalls = s.pending
	return out
}
