package js

import (
	"context"
	"fmt"
	"sync"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/runtime"
)

// Warm makes a fresh JavaScript runtime before the job that will run in
// it, and returns the function that runs that job (RunSource's
// signature): everything that does not depend on the job is done now —
// the runtime, the string size guards, and whatever prepare adds — so
// that a worker can make it between executions, off the path of the next
// one. It is still a fresh runtime per execution: the returned function
// runs one job in it; called again, it makes another runtime then, as
// RunSource does. prepare, when set, runs once in the fresh runtime before
// any job (a worker installs its array size guards there); it must leave
// nothing a script could tell from a runtime made at the start of its job.
func (e *Engine) Warm(prepare func(vm *goja.Runtime) error) (run func(context.Context, *runtime.Job, Source) *runtime.Outcome, err error) {
	x := newExec(e)
	defer func() {
		if r := recover(); r != nil {
			run, err = nil, fmt.Errorf("js: preparing a runtime panicked: %v", r)
		}
	}()
	x.newRuntime()
	if prepare != nil {
		if err := prepare(x.vm); err != nil {
			return nil, err
		}
	}
	var once sync.Mutex
	return func(ctx context.Context, job *runtime.Job, src Source) *runtime.Outcome {
		c := e.compile(src)
		if c.syntaxEr != nil {
			se := *c.syntaxEr
			return &runtime.Outcome{Err: &se}
		}
		once.Lock()
		w := x
		x = nil
		once.Unlock()
		if w == nil {
			w = newExec(e)
		}
		w.bind(ctx, job, c, src.MapPosition)
		return w.run()
	}, nil
}
