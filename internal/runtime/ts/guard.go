package ts

import (
	"github.com/ptcrun/ptc/internal/jsnest"
)

// maxNesting is the deepest bracket nesting, and maxArrows the most arrow
// functions, that transpile accepts. esbuild's parser recurses on nesting
// (about 100,000 levels overflow the Go stack, which is fatal) and its
// TypeScript arrow-function parsing is super-linear in nested arrows (1,000
// nested arrows take seconds). Real scripts stay far below both.
const (
	maxNesting = 256
	maxArrows  = 256
)

// complexityBounds are what checkComplexity adds to jsnest.Max.
var complexityBounds = jsnest.Bounds{Brackets: maxNesting, Arrows: maxArrows}

// checkComplexity refuses sources that would make esbuild recurse deeply
// or run for long: nesting past jsnest.Max (esbuild's parser recurses on
// operator chains and nested statements too: a million `!` overflow the
// Go stack), brackets nested past maxNesting, or more than maxArrows
// arrow functions. It is internal/jsnest's one scan, which skips strings,
// comments, template text and regular expression literals, so a `=>` in
// a string is not an arrow. It is a first line of defence, not a proof:
// transpile untrusted scripts where a runaway costs only the execution
// (the worker process, under its CPU and memory limits).
func checkComplexity(src string) *syntaxError {
	_, ne := jsnest.CheckWithin(src, complexityBounds)
	if ne == nil {
		return nil
	}
	return &syntaxError{Message: ne.Message(), Line: ne.Line, Column: ne.Column}
}
