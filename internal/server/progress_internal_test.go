package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// TestProgressIsBounded: while the client does not read, at most limit
// progress messages wait, never more; every log line waits, in order with
// the progress; every progress message is either delivered or counted by
// a delivered one, the newest always delivered — also when the drops
// happen at the very end, with no later call to carry them.
func TestProgressIsBounded(t *testing.T) {
	cases := []struct {
		name                string
		limit, events, logs int // logs: one log line after every logs events (0: none)
	}{
		{"under the limit", 8, 5, 0},
		{"at the limit", 8, 8, 0},
		{"past the limit", 8, 100, 0},
		{"limit of one", 1, 50, 0},
		{"with log lines", 8, 100, 3},
		{"a log line after each", 4, 60, 1},
		{"the real bound", progressQueue, 6 * progressQueue, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveStream()
			// The client does not read: the first send blocks until every
			// message is offered and the stream closed.
			reading := make(chan struct{})
			var got []*ptcv1.SessionResponse
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				l.run(context.Background(), func(m *ptcv1.SessionResponse) error {
					<-reading
					got = append(got, m)
					return nil
				})
			}()
			wantLogs := 0
			for i := 1; i <= tc.events; i++ {
				ev := &core.CallEvent{Seq: int32((i + 1) / 2), Tool: "t", Finished: i%2 == 0, OK: true}
				l.offer(&ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_Progress{Progress: progressPB(ev)}}, tc.limit)
				if tc.logs > 0 && i%tc.logs == 0 {
					wantLogs++
					l.push(&ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_Log{Log: &ptcv1.LogEntry{Message: fmt.Sprint(wantLogs)}}})
				}
				l.mu.Lock()
				waiting := 0
				for _, m := range l.queue {
					if m.GetProgress() != nil {
						waiting++
					}
				}
				l.mu.Unlock()
				if waiting > tc.limit {
					t.Fatalf("after %d events %d progress messages wait, the bound is %d", i, waiting, tc.limit)
				}
			}
			l.close()
			close(reading)
			<-sent
			<-l.drained

			var delivered, dropped, logs int
			var lastSeq int32
			var last *ptcv1.ToolProgress
			for _, m := range got {
				if lg := m.GetLog(); lg != nil {
					if logs++; lg.GetMessage() != fmt.Sprint(logs) {
						t.Fatalf("log line %d arrived as %q", logs, lg.GetMessage())
					}
					continue
				}
				p := m.GetProgress()
				if p.GetSeq() < lastSeq {
					t.Fatalf("progress out of order: seq %d after %d", p.GetSeq(), lastSeq)
				}
				lastSeq, last = p.GetSeq(), p
				delivered++
				dropped += int(p.GetDropped())
			}
			if delivered+dropped != tc.events {
				t.Fatalf("%d delivered + %d counted dropped, want %d events", delivered, dropped, tc.events)
			}
			if logs != wantLogs {
				t.Fatalf("%d log lines delivered, want %d", logs, wantLogs)
			}
			if wantSeq := int32((tc.events + 1) / 2); last.GetSeq() != wantSeq || last.GetPhase() != progressPB(&core.CallEvent{Finished: tc.events%2 == 0}).GetPhase() {
				t.Fatalf("the last event delivered is %v, want the newest (seq %d)", last, wantSeq)
			}
			if tc.events > 2*tc.limit && dropped == 0 {
				t.Fatalf("%d events, limit %d: nothing dropped", tc.events, tc.limit)
			}
		})
	}
}

func progressPB(ev *core.CallEvent) *ptcv1.ToolProgress {
	ss := &session{}
	return ss.progressMessage(ev).GetProgress()
}

// TestDeliverGivenUpIsNotSent: a delivered message whose sender stopped
// waiting (its call ended) before the sender reached it is not sent; one
// that was sent tells its sender so; the lines around both are sent in
// order.
func TestDeliverGivenUpIsNotSent(t *testing.T) {
	l := newLiveStream()
	msg := func(s string) *ptcv1.SessionResponse {
		return &ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_Log{Log: &ptcv1.LogEntry{Message: s}}}
	}
	l.push(msg("a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.deliver(ctx, msg("given up")); err != context.Canceled {
		t.Fatalf("deliver with its context ended: %v", err)
	}
	l.push(msg("b"))
	var sent []string
	kept := make(chan error, 1)
	go func() { kept <- l.deliver(context.Background(), msg("kept")) }()
	go l.run(context.Background(), func(m *ptcv1.SessionResponse) error {
		sent = append(sent, m.GetLog().GetMessage())
		return nil
	})
	if err := <-kept; err != nil {
		t.Fatal(err)
	}
	l.close()
	<-l.drained
	if got := fmt.Sprint(sent); got != "[a b kept]" {
		t.Fatalf("sent %s", got)
	}
}
