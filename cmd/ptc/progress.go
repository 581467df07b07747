package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ptcrun/ptc"
)

// progressPrinter prints one line on w as each tool call starts and one as
// it finishes:
//
//	ptc: → #3 get_expenses (28 B)
//	ptc: ← #3 get_expenses ok in 1.2ms (4.1 KiB)
//
// Lines are written whole, one at a time (calls finish on many goroutines).
func progressPrinter(w io.Writer) func(ptc.ProgressEvent) {
	var mu sync.Mutex
	return func(e ptc.ProgressEvent) {
		var line string
		switch {
		case !e.Finished:
			line = fmt.Sprintf("ptc: → #%d %s (%s)\n", e.Seq, e.Tool, byteCount(e.ArgumentBytes))
		case e.Outcome == "ok":
			line = fmt.Sprintf("ptc: ← #%d %s ok in %s (%s)\n", e.Seq, e.Tool, e.Duration.Round(10*time.Microsecond), byteCount(e.ResultBytes))
		default:
			line = fmt.Sprintf("ptc: ← #%d %s failed: %s in %s\n", e.Seq, e.Tool, e.Outcome, e.Duration.Round(10*time.Microsecond))
		}
		if e.Dropped > 0 {
			line = fmt.Sprintf("ptc: (%d progress events dropped: the terminal read too slowly)\n", e.Dropped) + line
		}
		mu.Lock()
		defer mu.Unlock()
		_, _ = io.WriteString(w, line)
	}
}

// byteCount renders n as "512 B", "4.1 KiB", "2.0 MiB".
func byteCount(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
