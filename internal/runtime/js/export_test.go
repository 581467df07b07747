package js

// FillWarm fills e's pool of runtimes made ahead (WithWarmRuntimes) on the
// calling goroutine, with runtimes for programs that need the groups of
// src, so that a test's next executions run in runtimes made ahead.
func FillWarm(e *Engine, src string) {
	g, _, _ := scan(bodyPrefix + src + bodySuffix)
	for len(e.warm) < cap(e.warm) {
		x, err := e.prepare(g)
		if err != nil {
			panic(err)
		}
		select {
		case e.warm <- x:
		default: // the Engine's own refill filled it
			return
		}
	}
}

// NoRefill stops e from refilling its pool by itself: only FillWarm
// does, so that a benchmark's timer sees an execution's own work alone.
func NoRefill(e *Engine) { e.warming.Store(true) }
