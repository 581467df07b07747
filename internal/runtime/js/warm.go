package js

import (
	"context"
	"fmt"
	"sync"

	"github.com/ptcrun/ptc/internal/runtime"
)

// Warm makes a fresh JavaScript runtime before the job that will run in
// it, and returns the function that runs that job (RunSource's
// signature): everything that does not depend on the job is done now —
// the runtime and the guards every script gets, which read the job's
// limits when called — so that a worker can make it between executions,
// off the path of the next one. The guards a program needs beyond those
// (lazy.go) are still installed when its job is attached. It is still a fresh
// runtime per execution: the returned function runs one job in it; called
// again, it makes another runtime then, as RunSource does.
func (e *Engine) Warm() (run func(context.Context, *runtime.Job, Source) *runtime.Outcome, err error) {
	x := newExec(e)
	defer func() {
		if r := recover(); r != nil {
			run, err = nil, fmt.Errorf("js: preparing a runtime panicked: %v", r)
		}
	}()
	x.newRuntime()
	// Most programs read properties: their size guards are made ahead
	// too (more guards than a program needs are harmless).
	x.install(groupSizes)
	var mu sync.Mutex
	return func(ctx context.Context, job *runtime.Job, src Source) *runtime.Outcome {
		c := e.compile(src)
		if c.syntaxEr != nil {
			se := *c.syntaxEr
			return &runtime.Outcome{Err: &se}
		}
		mu.Lock()
		w := x
		x = nil
		mu.Unlock()
		if w == nil {
			w = newExec(e)
		}
		w.attach(ctx, job, c, src.MapPosition)
		return w.run()
	}, nil
}
