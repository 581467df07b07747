// Package jsnest bounds how deeply JavaScript source text nests before a
// recursive-descent parser sees it. goja's parser and compiler (and
// esbuild's parser) recurse once per level of nesting; a deep enough
// input overflows the Go stack, which kills the whole process (Go's
// "fatal error: stack overflow" cannot be recovered). Check estimates the
// recursion depth in one linear scan, without parsing.
//
// The package imports only the standard library.
package jsnest

import (
	"fmt"
)

// Max bounds the nesting estimate. goja's parser and compiler use up to
// ~3.4 KiB of Go stack per level of nesting (measured: nested arrays,
// parentheses, arrow functions); Go's stack is capped at 1 GiB. 1,000
// levels keep a parse under ~4 MiB of stack, while real code stays far
// below: the deepest of 2,768 published JavaScript files (npm's own
// dependencies, the TypeScript compiler, minified bundles) estimates 161.
const Max = 1000

// Limit names what an Error's text went beyond.
type Limit uint8

const (
	// Estimate: the nesting estimate passed Max.
	Estimate Limit = iota
	// Brackets: brackets nested deeper than Bounds.Brackets.
	Brackets
	// Arrows: the text has more arrow functions than Bounds.Arrows.
	Arrows
	// Slash: a `/` may start a regular expression or divide, and the
	// scan cannot tell which the parser will see: after a word that may be
	// a keyword or a name (yield, await; of on a new line), or, when
	// a regular expression there would hold a quote, a backquote, a
	// bracket or a comment's start, after a '}' or at the start of a line
	// after an operand.
	// Guessing wrong would leave code unscanned: the text is refused.
	Slash
)

// Error reports source text beyond a limit (nested beyond Max, or past
// one of the Bounds given to CheckWithin), with the 1-based line and byte
// column where it passed the limit.
type Error struct {
	Line, Column int
	// Depth is the estimate at that point.
	Depth int
	// Limit is what the text went beyond, and Bound its value (Max for
	// Estimate).
	Limit Limit
	Bound int
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (at line %d, column %d)", e.Message(), e.Line, e.Column)
}

// Message describes the error without its position.
func (e *Error) Message() string {
	switch e.Limit {
	case Brackets:
		return fmt.Sprintf("the code nests brackets more than %d deep; flatten it", e.Bound)
	case Arrows:
		return fmt.Sprintf("the code has more than %d arrow functions; simplify it", e.Bound)
	case Slash:
		return "this / may start a regular expression or divide, and ptc does not guess which (after yield or await, " +
			"after a '}' or at the start of a line); put a regular expression there in parentheses, or keep a division on the line of its left operand " +
			"and do not name a variable yield or await"
	}
	return fmt.Sprintf("the code nests more than %d levels deep (brackets, operators and nested statements); "+
		"split long expressions and flatten deep nesting", Max)
}

// Bounds are limits a caller adds to Max for a parser with other weak
// spots (esbuild's TypeScript parser is super-linear in arrow
// functions). A zero field bounds nothing.
type Bounds struct {
	// Brackets bounds how deeply brackets ((, [, {, ${) nest.
	Brackets int
	// Arrows bounds how many arrow functions (`=>` tokens outside
	// strings, comments, template text and regular expressions) the text
	// has.
	Arrows int
}

// Info is what a scan learned about the text besides its nesting.
type Info struct {
	// Generators: the text uses generator syntax (function*, a *method,
	// yield*), so running it creates generator functions.
	Generators bool
	// RegExps: the text has regular expression literals.
	RegExps bool
	// Names has bit i set when the i-th of the watched names (see Scan)
	// appears as an identifier or property name.
	Names uint64
	// Escaped: an identifier is spelled with \u escapes, so Names may
	// miss it.
	Escaped bool
	// Access: the text may read a property of an object (or of something
	// the scan cannot tell from one): `.`, `?.` and `...`, any `[`, an
	// object literal where a destructuring pattern may stand (after `(`,
	// `,`, var, let or const, or followed by `=`), or `with`. Text without
	// it reads no property except through a name: a global's, or one of
	// the global object's inherited properties.
	Access bool
	// Patterns are the regular expression literals (Scan only).
	Patterns []Pattern
	// Arrows counts the `=>` tokens scanned.
	Arrows int
}

// Pattern is a regular expression literal: /Source/Flags.
type Pattern struct {
	Source, Flags string
}

// Check estimates, without parsing, how deeply goja's parser and
// compiler will recurse on src, and reports where the estimate passes
// Max.
//
// The estimate adds, for every open bracket ((, [, {, ${), one level plus
// the number of chaining tokens seen at that bracket level since the last
// statement or list separator: operators, member accesses, calls, arrows
// and statement keywords (`if`, `else`, `while`…) each nest one more level
// in goja's recursive descent or in its compiler (a+b+c is a left-deep
// tree). Separators (`;`, `,`, the end of a statement) reset the count of
// their level.
//
// Strings, template text, comments and regular expression literals are
// skipped; a `/` is taken for a regular expression where an operand is
// expected, as a JavaScript lexer decides it (the previous token, whether
// a `)` closed an `if (…)` and whether a `}` closed a block). The scan is
// linear and allocates only its bracket stack.
func Check(src string) (Info, *Error) {
	return Scan(src, nil)
}

// Scan is Check, also reporting in Info.Names which of the watched names
// (name → bit index, below 64) the text mentions as identifiers or
// property names. Text in strings, comments and templates does not count.
func Scan(src string, watch map[string]uint) (Info, *Error) {
	s := scanner{src: src, watch: watch}
	err := s.run()
	return s.info, err
}

// CheckWithin is Check, also refusing text past b: the first bracket
// nested deeper than b.Brackets, or the first arrow past b.Arrows, is an
// Error with Limit Brackets or Arrows at that token. It is the same scan
// as Check, so text in strings, comments, templates and regular
// expressions counts for neither.
func CheckWithin(src string, b Bounds) (Info, *Error) {
	s := scanner{src: src, bounds: b}
	err := s.run()
	return s.info, err
}

// Depth returns the deepest estimate Check reaches on src (it scans the
// whole text, past Max).
func Depth(src string) int {
	s := scanner{src: src, full: true}
	_ = s.run()
	return s.max
}
