package js

import (
	"errors"

	"github.com/dop251/goja/ast"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsnest"
)

// A script is the body of a function: ptc places its text between a
// prefix and a suffix (bodyPrefix and bodySuffix; the Function
// constructors do the same with their arguments) and parses the whole.
// Text that closes the function early and opens another one
// ("}); sideEffect(); (async function () {") still parses, into a program
// of another shape: code outside the function, or a completion value that
// is not the function. So the parse is checked to be exactly the wrapper:
// one expression statement, a function literal, whose braces are the
// wrapper's own. Then the text between them was parsed as a function body
// and nothing else, whatever it holds (braces and parentheses, comments,
// template literals, line terminators).

// errClosesWrapper is the cause of the syntax error of a script that
// closes the function it runs in.
var errClosesWrapper = errors.New("the script closes the function it runs in")

// wrapperIntact reports whether prg, parsed from code, is one function
// literal whose body opens at byte offset left and closes at byte offset
// right of code. When it is not, closed is the byte offset of the '}'
// that closed that function early, or -1 if it cannot be found.
func wrapperIntact(prg *ast.Program, left, right int) (ok bool, closed int) {
	if len(prg.Body) == 0 || prg.File == nil {
		return false, -1
	}
	base := prg.File.Base()
	es, isExpr := prg.Body[0].(*ast.ExpressionStatement)
	if !isExpr {
		return false, -1
	}
	fn := jsnest.LeftmostFunction(es.Expression)
	if fn == nil || fn.Body == nil || int(fn.Body.LeftBrace)-base != left {
		return false, -1
	}
	if len(prg.Body) == 1 && es.Expression == ast.Expression(fn) && int(fn.Body.RightBrace)-base == right {
		return true, -1
	}
	return false, int(fn.Body.RightBrace) - base
}

// checkWrapper returns the syntax error of a script (src, placed in code
// after bodyPrefix) whose parse prg is not the wrapper function alone, or
// nil.
func checkWrapper(prg *ast.Program, code, src string, mapPos func(int, int) (int, int, bool)) *fault.Error {
	ok, closed := wrapperIntact(prg, len(bodyPrefix)-1, len(code)-2)
	if ok {
		return nil
	}
	fe := &fault.Error{Kind: fault.KindSyntax, Message: "SyntaxError: " + jsnest.ClosesWrapper, Cause: errClosesWrapper}
	var line, col int
	switch {
	case closed >= len(bodyPrefix) && closed < len(bodyPrefix)+len(src):
		line, col = offsetPosition(src, closed-len(bodyPrefix))
	default:
		if u, unbalanced := jsnest.Balance(src); unbalanced && u.Extra {
			line, col = u.Line, u.Column
		} else {
			line, col = 1, 1
		}
	}
	if mapPos != nil {
		if l, c, ok := mapPos(line, col); ok {
			line, col = l, c
		}
	}
	fe.Line, fe.Column = line, col
	return fe
}

// offsetPosition returns the 1-based line and byte column of byte offset
// off in s (lines end at \n, as goja counts them in positions).
func offsetPosition(s string, off int) (line, col int) {
	line, start := 1, 0
	for i := 0; i < off && i < len(s); i++ {
		if s[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	return line, off - start + 1
}
