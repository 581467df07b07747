package jsnest

import (
	"errors"
	"fmt"
	goruntime "runtime"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// ErrConstantTooLarge is Compile's error for a program whose constant
// expressions goja's compiler cannot evaluate: it folds them while it
// compiles, and a BigInt shift by 2**62 (1n << (1n << 62n)) asks Go for a
// value no slice can hold.
var ErrConstantTooLarge = errors.New("RangeError: the script computes a constant too large to build (a BigInt shifted or raised by a huge amount, say); compute with smaller values")

// Compile compiles a parsed program with goja. A Go runtime error raised
// inside goja's compiler (its constant folding) is ErrConstantTooLarge
// instead of a panic that would take the process down.
func Compile(prg *ast.Program) (p *goja.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(goruntime.Error); !ok {
				panic(r)
			}
			p, err = nil, ErrConstantTooLarge
		}
	}()
	return goja.CompileAST(prg, false)
}

// ErrParserFailed is Parse's error when goja's parser panics.
var ErrParserFailed = errors.New("the parser failed on this text; check the syntax around brackets, patterns and spread elements")

// Parse is goja's parser.ParseFile, with a panic of the parser's (it
// indexes out of range on some malformed text: function f([...function)
// returned as ErrParserFailed, a syntax error, instead of ending the
// process it runs in.
func Parse(name, code string, options ...parser.Option) (prg *ast.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			prg, err = nil, fmt.Errorf("%w (%v)", ErrParserFailed, r)
		}
	}()
	return parser.ParseFile(nil, name, code, 0, options...)
}
