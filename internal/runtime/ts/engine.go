package ts

import (
	"context"
	"errors"
	"strings"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// Engine runs TypeScript jobs: it transpiles job.Source (cached by source
// hash) and runs the result on a JavaScript engine, with error positions
// and stacks mapped back to the TypeScript source.
type Engine struct {
	js    *js.Engine
	cache *cache
}

// NewEngine returns an Engine that runs on e and keeps cacheSize
// transpiled programs (defaultCacheSize when cacheSize <= 0).
func NewEngine(e *js.Engine, cacheSize int) *Engine {
	if cacheSize <= 0 {
		cacheSize = defaultCacheSize
	}
	return &Engine{js: e, cache: newCache(cacheSize)}
}

// Run implements runtime.Engine.
func (e *Engine) Run(ctx context.Context, job *runtime.Job) *runtime.Outcome {
	p, err := e.cache.transpile(job.Source)
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			return &runtime.Outcome{Err: se.Fault()}
		}
		return &runtime.Outcome{Err: &fault.Error{Kind: fault.KindInternal, Message: "internal error while transpiling TypeScript", Cause: err}}
	}
	return e.js.RunSource(ctx, job, js.Source{
		Code:           p.JS,
		Wrapped:        true,
		Program:        p.Compiled,
		File:           compiledName,
		Display:        sourceName,
		MapPosition:    p.Position,
		DisposeSymbols: strings.Contains(p.JS, "dispose"),
	})
}

// stats returns the transpile cache's counters.
func (e *Engine) stats() cacheStats { return e.cache.stats() }
