package server

import (
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// TestProgressIsBounded: when the client lags and progressQueue progress
// messages wait, progress is dropped, never queued without bound, and the
// next message that gets through counts what was dropped; log lines are
// queued whatever waits, in order with the progress.
func TestProgressIsBounded(t *testing.T) {
	ss := &session{live: newLiveStream()}
	for i := int32(1); i <= progressQueue+3; i++ {
		ss.progress(&core.CallEvent{Seq: i, Tool: "t"})
	}
	ss.live.push(&ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_Log{Log: &ptcv1.LogEntry{Message: "kept"}}})
	q, _ := ss.live.take()
	if len(q) != progressQueue+1 {
		t.Fatalf("%d queued, want %d", len(q), progressQueue+1)
	}
	for i, m := range q[:progressQueue] {
		if p := m.GetProgress(); p.GetSeq() != int32(i+1) || p.GetDropped() != 0 {
			t.Fatalf("message %d: %v", i, p)
		}
	}
	if l := q[progressQueue].GetLog(); l.GetMessage() != "kept" {
		t.Fatalf("the log line after the drops: %v", q[progressQueue])
	}
	ss.progress(&core.CallEvent{Seq: progressQueue + 4, Tool: "t", Finished: true, OK: true})
	q, _ = ss.live.take()
	if len(q) != 1 {
		t.Fatalf("%d queued after the sender took the queue", len(q))
	}
	if m := q[0].GetProgress(); m.GetSeq() != progressQueue+4 || m.GetDropped() != 3 || m.GetOutcome() != "ok" {
		t.Fatalf("after the drops: %v", m)
	}
}
