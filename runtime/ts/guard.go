package ts

import (
	"fmt"
	"strings"
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

// checkComplexity refuses sources that would make esbuild recurse deeply
// or run for long. It is a fast first line of defence, not a proof: it
// skips strings, comments and template text but cannot tell every regular
// expression literal from a division, so a crafted source can hide
// nesting from it. transpile untrusted scripts where a runaway costs only
// the execution (the worker process, under its CPU and memory limits).
func checkComplexity(src string, srcLine []int) *syntaxError {
	if n := strings.Count(src, "=>"); n > maxArrows {
		return &syntaxError{Message: fmt.Sprintf("the script has %d arrow functions, over the limit of %d; simplify it", n, maxArrows)}
	}
	depth := 0
	// templates holds, for each template literal whose ${ } is open, the
	// bracket depth at which that substitution started.
	var templates []int
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
			} else if i+1 < len(src) && src[i+1] == '*' {
				end := strings.Index(src[i+2:], "*/")
				if end < 0 {
					return nil // unterminated: esbuild reports it
				}
				i += end + 3
			}
		case '\'', '"':
			for i++; i < len(src) && src[i] != c && src[i] != '\n'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '`':
			i = skipTemplate(src, i+1)
			if i < len(src) && src[i] == '$' { // "${" opens a substitution
				i++
				depth++
				templates = append(templates, depth)
				if depth > maxNesting {
					return nestingError(srcLine, i)
				}
			}
		case '(', '[', '{':
			depth++
			if depth > maxNesting {
				return nestingError(srcLine, i)
			}
		case ')', ']', '}':
			if c == '}' && len(templates) > 0 && templates[len(templates)-1] == depth {
				templates = templates[:len(templates)-1]
				depth--
				i = skipTemplate(src, i+1)
				if i < len(src) && src[i] == '$' {
					i++
					depth++
					templates = append(templates, depth)
				}
				continue
			}
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

func nestingError(srcLine []int, off int) *syntaxError {
	line, col := offsetPosition(srcLine, off)
	return &syntaxError{Message: fmt.Sprintf("the script nests brackets more than %d deep; flatten it", maxNesting), Line: line, Column: col}
}

// skipTemplate returns the index of the closing backquote of the template
// text starting at i, or of the '$' of a "${" in it, or len(src).
func skipTemplate(src string, i int) int {
	for ; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '`':
			return i
		case '$':
			if i+1 < len(src) && src[i+1] == '{' {
				return i
			}
		}
	}
	return len(src)
}

// offsetPosition converts a byte offset in the source to a 1-based line and
// byte column.
func offsetPosition(srcLine []int, off int) (int, int) {
	line := 1
	for line < len(srcLine) && srcLine[line] <= off {
		line++
	}
	return line, off - srcLine[line-1] + 1
}
