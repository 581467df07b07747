// Package logsample bounds how many log records of one kind a server
// writes: a flood of refused requests must not become a flood of log
// lines (and of disk and collector load) that the requests' senders
// control. The records left out are counted, and the next record written
// says how many.
package logsample

import (
	"sync/atomic"

	"golang.org/x/time/rate"
)

// Sampler lets records through at a steady rate with bursts, and counts
// the ones it holds back. It is safe for concurrent use.
type Sampler struct {
	lim  *rate.Limiter
	left atomic.Int64
}

// New returns a Sampler that lets perSecond records through a second on
// average, and up to burst at once.
func New(perSecond float64, burst int) *Sampler {
	return &Sampler{lim: rate.NewLimiter(rate.Limit(perSecond), burst)}
}

// Allow reports whether the next record is written and, when it is, how
// many records were held back since the last one written (to log with
// it, e.g. as "suppressed").
func (s *Sampler) Allow() (write bool, suppressed int64) {
	if s.lim.Allow() {
		return true, s.left.Swap(0)
	}
	s.left.Add(1)
	return false, 0
}
