package logsample

import (
	"testing"

	"golang.org/x/time/rate"
)

// TestSamplerBoundsAndCounts: past its burst a Sampler holds records
// back, and the next record it lets through counts them.
func TestSamplerBoundsAndCounts(t *testing.T) {
	s := New(1e-9, 3) // no refill within the test: the burst alone
	written := 0
	for i := 0; i < 1000; i++ {
		if ok, _ := s.Allow(); ok {
			written++
		}
	}
	if written != 3 {
		t.Fatalf("%d of 1000 written, want the burst of 3", written)
	}
	s.lim.SetLimit(rate.Inf) // every record let through from now on
	ok, suppressed := s.Allow()
	if !ok || suppressed != 997 {
		t.Fatalf("after the flood: write %v, suppressed %d; want true, 997", ok, suppressed)
	}
	if _, suppressed := s.Allow(); suppressed != 0 {
		t.Fatalf("suppressed %d counted twice", suppressed)
	}
}

func ExampleSampler() {
	s := New(10, 20) // at most 10 records a second, bursts of 20
	if ok, suppressed := s.Allow(); ok {
		_ = suppressed // log the record, with suppressed when it is not 0
	}
}
