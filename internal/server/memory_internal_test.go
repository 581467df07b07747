package server

import (
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
)

// TestReleaserBurstAndTail: executions each under the threshold schedule a
// release once together they moved burstFactor times it, and an execution
// that ends while a release is pending is followed by one more release.
func TestReleaserBurstAndTail(t *testing.T) {
	released := make(chan struct{})
	r := &releaser{threshold: 100, release: func() { released <- struct{}{} }}
	small := core.Request{Script: core.Script{Source: strings.Repeat("x", 100)}}
	large := core.Request{Script: core.Script{Source: strings.Repeat("x", 101)}}
	for i := 0; i < burstFactor; i++ {
		r.note(small, &core.Result{})
	}
	r.mu.Lock()
	armed := r.timer != nil
	r.mu.Unlock()
	if armed {
		t.Fatalf("a release was scheduled after %d executions of the threshold's weight", burstFactor)
	}
	r.note(small, &core.Result{})
	r.mu.Lock()
	armed = r.timer != nil
	r.mu.Unlock()
	if !armed {
		t.Fatal("no release scheduled past burstFactor times the threshold")
	}
	r.note(large, &core.Result{}) // ends while the release is pending
	<-released
	<-released // the tail release, for the execution that ended meanwhile
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.moved != 0 || r.again {
		t.Errorf("after the releases: moved %d, again %v", r.moved, r.again)
	}
}

// TestReleaserWeighsLogEntries: an execution of many empty log lines
// weighs what its entries take in ptcd, not only their text: 100,000
// empty lines pass the default threshold.
func TestReleaserWeighsLogEntries(t *testing.T) {
	r := &releaser{threshold: DefaultReleaseAfter}
	res := &core.Result{Logs: make([]core.LogEntry, 100_000)}
	if w := r.weight(core.Request{}, res); w <= DefaultReleaseAfter {
		t.Fatalf("100,000 empty lines weigh %d, not past the threshold %d", w, DefaultReleaseAfter)
	}
}
