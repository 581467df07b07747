package server

import (
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// TestProgressIsBounded: when the client lags and the queue is full,
// progress is dropped, never queued without bound, and the next message
// that gets through counts what was dropped.
func TestProgressIsBounded(t *testing.T) {
	ss := &session{live: make(chan *ptcv1.SessionResponse, 2)}
	for i := int32(1); i <= 5; i++ {
		ss.progress(&core.CallEvent{Seq: i, Tool: "t"})
	}
	if len(ss.live) != 2 {
		t.Fatalf("%d queued", len(ss.live))
	}
	for i := 0; i < 2; i++ {
		if m := (<-ss.live).GetProgress(); m.GetSeq() != int32(i+1) || m.GetDropped() != 0 {
			t.Fatalf("message %d: %v", i, m)
		}
	}
	ss.progress(&core.CallEvent{Seq: 6, Tool: "t", Finished: true, OK: true})
	if m := (<-ss.live).GetProgress(); m.GetSeq() != 6 || m.GetDropped() != 3 || m.GetOutcome() != "ok" {
		t.Fatalf("after the drops: %v", m)
	}
}
