package js

import (
	"strings"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsnest"
)

// explainSyntax rewrites goja's syntax error for a script that does not
// close what it opens, or closes what it did not open, in the script's
// own terms. The script runs inside a wrapper function, so goja reports
// such errors at the wrapper's closing tokens, past the end of the script
// ("Unexpected token }" on a line the script does not have); fe then says
// instead, at a position inside the script:
//
//   - a closing bracket that closes nothing (a stray '}' would close the
//     wrapper): that bracket;
//   - a script that ends inside a bracket, template literal or comment:
//     "unexpected end of script", at the script's last character, naming
//     the innermost construct left open and where it opened.
//
// An unterminated string is named as such. Other errors keep goja's
// message and position.
func explainSyntax(fe *fault.Error, code string) {
	lines := strings.Count(code, "\n") + 1
	atEnd := fe.Line > lines || fe.Line == 0 || strings.HasSuffix(fe.Message, "Unexpected end of input")
	u, unbalanced := jsnest.Balance(code)
	switch {
	case unbalanced && u.Extra && (atEnd || !after(u.Line, u.Column, fe.Line, fe.Column)):
		fe.Message = "SyntaxError: " + u.Message()
		fe.Line, fe.Column = u.Line, u.Column
	case atEnd:
		fe.Message = "SyntaxError: " + jsnest.EndOfScript
		if unbalanced {
			fe.Message = "SyntaxError: " + u.Message()
		}
		fe.Line, fe.Column = jsnest.LastChar(code)
	case strings.HasSuffix(fe.Message, "Unexpected token ILLEGAL") && quoteAt(code, fe.Line, fe.Column):
		fe.Message = "SyntaxError: unterminated string: close it on the same line (a template literal `...` may span lines)"
	}
}

// after reports whether line:col comes after the position l:c.
func after(line, col, l, c int) bool {
	return line > l || line == l && col > c
}

// quoteAt reports whether the character at 1-based line:col of code is a
// quote.
func quoteAt(code string, line, col int) bool {
	ls := strings.Split(code, "\n")
	if line < 1 || line > len(ls) || col < 1 || col > len(ls[line-1]) {
		return false
	}
	c := ls[line-1][col-1]
	return c == '"' || c == '\''
}
