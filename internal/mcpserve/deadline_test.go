package mcpserve

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlines records the write deadline in force at each write and flush.
type deadlines struct {
	*httptest.ResponseRecorder
	now    time.Time // the deadline set now; zero: none
	atEach []time.Time
}

func (d *deadlines) SetWriteDeadline(t time.Time) error { d.now = t; return nil }

func (d *deadlines) Write(b []byte) (int, error) {
	d.atEach = append(d.atEach, d.now)
	return d.ResponseRecorder.Write(b)
}

func (d *deadlines) Flush() {
	d.atEach = append(d.atEach, d.now)
	d.ResponseRecorder.Flush()
}

// TestDeadlineWriter: every write and flush of a response runs under a
// write deadline of WriteTimeout from its start, through the wrappers
// the handler adds, and none is left in force between them (an event
// stream may stay quiet).
func TestDeadlineWriter(t *testing.T) {
	rec := &deadlines{ResponseRecorder: httptest.NewRecorder()}
	var w http.ResponseWriter = newDeadlineWriter(rec, time.Minute)
	w = &releasingWriter{ResponseWriter: w, release: func() {}}
	before := time.Now()
	if _, err := w.Write([]byte("event: message\n")); err != nil {
		t.Fatal(err)
	}
	if err := http.NewResponseController(w).Flush(); err != nil {
		t.Fatal(err)
	}
	if len(rec.atEach) != 2 {
		t.Fatalf("%d writes and flushes seen, want 2", len(rec.atEach))
	}
	for i, d := range rec.atEach {
		if d.Before(before.Add(time.Minute)) {
			t.Fatalf("write %d ran under the deadline %v, want one a minute on", i, d)
		}
	}
	if !rec.now.IsZero() {
		t.Fatalf("a deadline %v stays in force between writes", rec.now)
	}
}
