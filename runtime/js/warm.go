package js

import (
	"context"
	"fmt"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/runtime"
)

// Warm is a fresh JavaScript runtime made before the job that will run in
// it: everything that does not depend on the job is done — the runtime,
// the string size guards, and whatever the maker's prepare adds — so that
// a worker can make it between executions, off the path of the next one.
// It is still a fresh runtime per execution: a Warm runs one job, once,
// and no script has run in it before.
type Warm struct {
	x *exec
}

// Warm makes a runtime for RunWarm. prepare, when set, runs once in the
// fresh runtime before any job (a worker installs its array size guards
// there); it must leave nothing a script could tell from a runtime made
// at the start of its job.
func (e *Engine) Warm(prepare func(vm *goja.Runtime) error) (w *Warm, err error) {
	x := newExec(e)
	defer func() {
		if r := recover(); r != nil {
			w, err = nil, fmt.Errorf("js: preparing a runtime panicked: %v", r)
		}
	}()
	x.newRuntime()
	if prepare != nil {
		if err := prepare(x.vm); err != nil {
			return nil, err
		}
	}
	return &Warm{x: x}, nil
}

// RunWarm runs src as RunSource does, in w's runtime; w is used up. A nil
// w, or one already used, gets a runtime made now.
func (e *Engine) RunWarm(ctx context.Context, job *runtime.Job, src Source, w *Warm) *runtime.Outcome {
	c := e.compile(src)
	if c.syntaxEr != nil {
		se := *c.syntaxEr
		return &runtime.Outcome{Err: &se}
	}
	var x *exec
	if w != nil && w.x != nil && w.x.e == e {
		x, w.x = w.x, nil
	} else {
		x = newExec(e)
	}
	x.bind(ctx, job, c, src.MapPosition)
	return x.run()
}
