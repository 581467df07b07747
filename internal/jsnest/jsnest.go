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
	"strings"
	"unicode/utf8"
)

// Max bounds the nesting estimate. goja's parser and compiler use up to
// ~3.4 KiB of Go stack per level of nesting (measured: nested arrays,
// parentheses, arrow functions); Go's stack is capped at 1 GiB. 1,000
// levels keep a parse under ~4 MiB of stack, while real code stays far
// below: the deepest of 2,768 published JavaScript files (npm's own
// dependencies, the TypeScript compiler, minified bundles) estimates 161.
const Max = 1000

// Error reports source text nested beyond Max, with the 1-based line and
// byte column where the estimate passed it.
type Error struct {
	Line, Column int
	// Depth is the estimate at that point.
	Depth int
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (at line %d, column %d)", e.Message(), e.Line, e.Column)
}

// Message describes the error without its position.
func (e *Error) Message() string {
	return fmt.Sprintf("the code nests more than %d levels deep (brackets, operators and nested statements); "+
		"split long expressions and flatten deep nesting", Max)
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
	// Patterns are the regular expression literals (Scan only).
	Patterns []Pattern
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

// Depth returns the deepest estimate Check reaches on src (it scans the
// whole text, past Max).
func Depth(src string) int {
	s := scanner{src: src, full: true}
	_ = s.run()
	return s.max
}

// tokClass is what the previous significant token lets come next.
type tokClass uint8

const (
	// operandNext: an operand may start here (a `/` begins a regular
	// expression, a `{` an object literal or a block).
	operandNext tokClass = iota
	// operatorNext: an operand just ended (a `/` divides, `(` and `[` call
	// and index).
	operatorNext
)

// level is one open bracket.
type level struct {
	open byte // '(', '[', '{' or '$' (a template substitution)
	run  int  // chaining tokens at this level since the last separator
	// ctrl: a '(' that follows if/while/for/with (its ')' is followed by
	// a statement, so a '/' after it starts a regular expression).
	ctrl bool
	// params: a '(' that holds a function's parameters.
	params bool
	// block: a '{' that opens statements (a block or a function body)
	// rather than an object literal or a class body.
	block bool
	// exprFunc: a function or class body whose function is an
	// expression, so that an operator may follow its '}'.
	exprFunc bool
	// class: a '{' that opens a class body.
	class bool
	// questions counts '?' awaiting their ':' at this level.
	questions int
}

type scanner struct {
	src    string
	i      int
	stack  []level
	top    level // the program's own level (never popped)
	sumRun int   // the run counts of all levels, top included
	prev   tokClass
	// stmt: the next token starts a statement (a '{' is a block).
	stmt bool
	// kw is the previous token when it was a keyword that matters to the
	// next one (if, while, for, with, function, class, else, do, try…).
	kw string
	// pendingFunc: `function` (or a method name) seen, the next '(' holds
	// parameters; pendingFuncExpr says whether it is an expression.
	pendingFunc, pendingFuncExpr bool
	// pendingClass: `class` seen; its next '{' opens a class body.
	pendingClass, pendingClassExpr bool
	// pendingBody: the ')' of a parameter list just closed; a '{' opens
	// the function body (expression function when pendingBodyExpr).
	pendingBody, pendingBodyExpr bool
	// arrow: the previous token was "=>".
	arrow bool
	// newline: a line terminator since the previous token.
	newline bool
	// max is the deepest estimate so far.
	max int
	// full: scan to the end, past Max (Depth).
	full  bool
	info  Info
	watch map[string]uint
}

func (s *scanner) cur() *level {
	if len(s.stack) == 0 {
		return &s.top
	}
	return &s.stack[len(s.stack)-1]
}

func (s *scanner) depth() int { return len(s.stack) + s.sumRun }

// chain counts one chaining token at the current level.
func (s *scanner) chain() *Error {
	s.cur().run++
	s.sumRun++
	return s.check()
}

// reset ends the current level's chain (a separator or a new statement).
func (s *scanner) reset() {
	l := s.cur()
	s.sumRun -= l.run
	l.run = 0
}

func (s *scanner) check() *Error {
	d := s.depth()
	if d > s.max {
		s.max = d
	}
	if d > Max && !s.full {
		line, col := s.position(s.i)
		return &Error{Line: line, Column: col, Depth: d}
	}
	return nil
}

// position returns the 1-based line and byte column of offset off.
func (s *scanner) position(off int) (int, int) {
	line, start := 1, 0
	for j := 0; j < off && j < len(s.src); j++ {
		if s.src[j] == '\n' {
			line++
			start = j + 1
		}
	}
	return line, off - start + 1
}

func (s *scanner) push(l level) *Error {
	s.stack = append(s.stack, l)
	return s.check()
}

// pop closes the innermost level if it matches c and returns it.
func (s *scanner) pop(c byte) (level, bool) {
	if len(s.stack) == 0 {
		return level{}, false
	}
	l := s.stack[len(s.stack)-1]
	var want byte
	switch c {
	case ')':
		want = '('
	case ']':
		want = '['
	default:
		want = '{'
	}
	if l.open != want && !(c == '}' && l.open == '$') {
		// Unbalanced: leave the stack as it is (the parser reports it).
		return level{}, false
	}
	s.stack = s.stack[:len(s.stack)-1]
	s.sumRun -= l.run
	return l, true
}

func (s *scanner) run() *Error {
	s.stmt = true
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\n' || c == '\r':
			s.newline = true
			s.i++
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			s.i++
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s.src[s.i:])
			switch r {
			case '\u2028', '\u2029':
				s.newline = true
				s.i += n
			case '\u00a0', '\ufeff', '\u1680', '\u202f', '\u205f', '\u3000':
				s.i += n
			default:
				if r >= '\u2000' && r <= '\u200a' {
					s.i += n
					continue
				}
				if err := s.word(); err != nil {
					return err
				}
			}
		case c == '/' && s.at(1) == '/':
			s.skipLine()
		case c == '/' && s.at(1) == '*':
			end := indexFrom(s.src, "*/", s.i+2)
			if end < 0 {
				return nil // unterminated comment: the parser reports it
			}
			for j := s.i; j < end; j++ {
				if s.src[j] == '\n' || s.src[j] == '\r' {
					s.newline = true
				}
			}
			s.i = end + 2
		case c == '\'' || c == '"':
			s.beforeOperand()
			s.skipString(c)
			s.operand()
		case c == '`':
			if s.prev == operatorNext && !s.newline {
				// A tagged template calls its tag.
				if err := s.chain(); err != nil {
					return err
				}
			} else {
				s.beforeOperand()
			}
			s.i++
			if err := s.template(); err != nil {
				return err
			}
		case c == '/' && s.prev == operandNext:
			s.info.RegExps = true
			if err := s.skipRegexp(); err != nil {
				return err
			}
			s.operand()
		case isIdentStart(c):
			if err := s.word(); err != nil {
				return err
			}
		case c >= '0' && c <= '9' || c == '.' && s.at(1) >= '0' && s.at(1) <= '9':
			s.beforeOperand()
			s.skipNumber()
			s.operand()
		default:
			if err := s.punct(c); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *scanner) at(k int) byte {
	if s.i+k < len(s.src) {
		return s.src[s.i+k]
	}
	return 0
}

func indexFrom(src, sub string, from int) int {
	for j := from; j+len(sub) <= len(src); j++ {
		if src[j:j+len(sub)] == sub {
			return j
		}
	}
	return -1
}

// beforeOperand handles automatic semicolon insertion: an operand after a
// finished operand on a new line starts a new statement.
func (s *scanner) beforeOperand() {
	if s.prev == operatorNext && s.newline {
		s.reset()
		s.stmt = true
	}
}

// operand records that an operand (literal, identifier, closing bracket)
// just ended.
func (s *scanner) operand() {
	s.prev = operatorNext
	s.stmt = false
	s.kw = ""
	s.arrow = false
	s.newline = false
	s.pendingBody = false
}

// operator records a token after which an operand is expected.
func (s *scanner) operator() {
	s.prev = operandNext
	s.stmt = false
	s.kw = ""
	s.arrow = false
	s.newline = false
	s.pendingBody = false
}

func (s *scanner) skipLine() {
	for s.i < len(s.src) {
		c := s.src[s.i]
		if c == '\n' || c == '\r' {
			return
		}
		if c == 0xe2 && s.at(1) == 0x80 && (s.at(2) == 0xa8 || s.at(2) == 0xa9) {
			return
		}
		s.i++
	}
}

func (s *scanner) skipString(q byte) {
	s.i++
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\\':
			s.i += 2
			if s.i <= len(s.src) && s.src[s.i-1] == '\r' && s.at(0) == '\n' {
				s.i++
			}
		case c == q:
			s.i++
			return
		case c == '\n' || c == '\r':
			return // unterminated: the parser reports it
		default:
			s.i++
		}
	}
}

func (s *scanner) skipRegexp() *Error {
	start := s.i
	s.i++
	end := RegExpEnd(s.src, s.i)
	if end < 0 {
		s.i = len(s.src)
		for j := start; j < len(s.src); j++ {
			if s.src[j] == '\n' || s.src[j] == '\r' {
				s.i = j
				break
			}
		}
		return nil // unterminated: the parser reports it
	}
	pattern := s.src[start+1 : end]
	s.i = end + 1
	for s.i < len(s.src) && isIdentPart(s.src[s.i]) {
		s.i++
	}
	if s.watch != nil {
		s.info.Patterns = append(s.info.Patterns, Pattern{Source: pattern, Flags: s.src[end+1 : s.i]})
	}
	if d := RegExpDepth(pattern); len(s.stack)+d > Max && !s.full {
		line, col := s.position(start)
		return &Error{Line: line, Column: col, Depth: len(s.stack) + d}
	}
	return nil
}

// RegExpEnd returns the index of the '/' that closes the regular
// expression literal whose body starts at i in src, or -1 if a line ends
// first.
func RegExpEnd(src string, i int) int {
	inClass := false
	for ; i < len(src); i++ {
		switch c := src[i]; {
		case c == '\\':
			i++
		case c == '\n' || c == '\r':
			return -1
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '/' && !inClass:
			return i
		}
	}
	return -1
}

// RegExpDepth returns how deeply a regular expression pattern nests its
// groups (goja's pattern translator recurses on them).
func RegExpDepth(pattern string) int {
	depth, max, inClass := 0, 0, false
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '[':
			inClass = true
		case ']':
			inClass = false
		case '(':
			if !inClass {
				if depth++; depth > max {
					max = depth
				}
			}
		case ')':
			if !inClass && depth > 0 {
				depth--
			}
		}
	}
	return max
}

// CheckRegExp reports a pattern nested more than Max groups deep.
func CheckRegExp(pattern string) *Error {
	if d := RegExpDepth(pattern); d > Max {
		return &Error{Line: 1, Column: 1, Depth: d}
	}
	return nil
}

func (s *scanner) skipNumber() {
	start := s.i
	hex := s.src[s.i] == '0' && (s.at(1)|0x20 == 'x' || s.at(1)|0x20 == 'b' || s.at(1)|0x20 == 'o')
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case isIdentPart(c) || c == '.':
			s.i++
		case (c == '+' || c == '-') && !hex && s.i > start && s.src[s.i-1]|0x20 == 'e':
			s.i++
		default:
			return
		}
	}
}

// template scans template text after a backquote (or after the '}' that
// closes a substitution) up to the closing backquote, or enters the
// substitution at "${".
func (s *scanner) template() *Error {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case '\\':
			s.i += 2
		case '`':
			s.i++
			s.operand()
			return nil
		case '$':
			if s.at(1) == '{' {
				s.i += 2
				s.operator()
				return s.push(level{open: '$'})
			}
			s.i++
		default:
			s.i++
		}
	}
	return nil
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c == '\\' || c == '#'
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9' || c >= utf8.RuneSelf
}

// word scans an identifier or keyword.
func (s *scanner) word() *Error {
	start := s.i
	for s.i < len(s.src) {
		c := s.src[s.i]
		if c == '\\' { // \uXXXX escape
			s.i += 2
			continue
		}
		if !isIdentPart(c) {
			break
		}
		s.i++
	}
	w := s.src[start:s.i]
	if s.watch != nil {
		if bit, ok := s.watch[w]; ok {
			s.info.Names |= 1 << bit
		}
	}
	if strings.IndexByte(w, '\\') >= 0 {
		s.info.Escaped = true
	}
	member := start > 0 && s.prevPunct(start) == '.'
	if member {
		// A property name after '.', whatever its spelling.
		s.operand()
		return nil
	}
	s.beforeOperand()
	stmt, prevKw := s.stmt, s.kw
	switch w {
	case "if", "while", "for", "with", "else", "do", "try", "finally", "switch", "catch":
		s.operator()
		s.kw = w
		if w == "else" || w == "do" || w == "try" || w == "finally" {
			s.stmt = true
		}
		if w == "if" || w == "while" || w == "for" || w == "with" || w == "else" {
			return s.chain()
		}
		return nil
	case "return", "throw", "case", "typeof", "void", "delete", "new", "in", "instanceof", "of", "yield", "await", "extends":
		s.operator()
		s.kw = w
		if w == "await" && prevKw == "for" {
			s.kw = "for" // for await (…)
		}
		return s.chain()
	case "function":
		s.operator()
		s.pendingFunc, s.pendingFuncExpr = true, !stmt
		s.kw = w
		return nil
	case "class":
		s.operator()
		s.pendingClass, s.pendingClassExpr = true, !stmt
		s.kw = w
		return nil
	case "var", "let", "const", "default", "break", "continue", "debugger", "import", "export":
		s.operator()
		s.kw = w
		return nil
	}
	// An identifier, or a literal keyword (this, null, true…).
	if s.kw == "function" || s.kw == "class" {
		// The name of a function or class keeps what is pending.
		s.prev = operatorNext
		s.newline = false
		s.kw = "name"
		return nil
	}
	s.operand()
	return nil
}

// prevPunct returns the last non-space byte before off (0 at the start).
func (s *scanner) prevPunct(off int) byte {
	for j := off - 1; j >= 0; j-- {
		switch c := s.src[j]; c {
		case ' ', '\t', '\n', '\r':
			continue
		default:
			if c == '.' && j > 0 && s.src[j-1] == '.' {
				return 0 // spread "...x"
			}
			return c
		}
	}
	return 0
}

func (s *scanner) punct(c byte) *Error {
	switch c {
	case '(':
		call := s.prev == operatorNext && s.kw != "name"
		l := level{open: '('}
		switch {
		case s.kw == "if" || s.kw == "while" || s.kw == "for" || s.kw == "with" || s.kw == "switch" || s.kw == "catch":
			l.ctrl = true
		case s.pendingFunc || s.kw == "name" || s.kw == "function":
			l.params = true
			l.exprFunc = s.pendingFuncExpr
			s.pendingFunc = false
		case s.prev == operatorNext && s.inClassOrObject():
			// A method: name(params) { body }.
			l.params = true
			l.exprFunc = true
		}
		if call {
			if err := s.chain(); err != nil {
				return err
			}
		} else {
			s.beforeOperand()
		}
		s.i++
		s.operator()
		return s.push(l)
	case '[':
		if s.prev == operatorNext {
			if err := s.chain(); err != nil {
				return err
			}
		} else {
			s.beforeOperand()
		}
		s.i++
		s.operator()
		return s.push(level{open: '['})
	case '{':
		l := level{open: '{'}
		switch {
		case s.pendingBody:
			l.block, l.exprFunc = true, s.pendingBodyExpr
		case s.pendingClass:
			l.class, l.exprFunc = true, s.pendingClassExpr
			s.pendingClass = false
		default:
			s.beforeOperand() // a '{' on a new line after an operand starts a statement
			l.block = s.arrow || s.stmt || s.prev == operatorNext && s.kw == "name"
		}
		s.i++
		s.operator()
		s.stmt = l.block
		return s.push(l)
	case ')', ']':
		s.i++
		l, ok := s.pop(c)
		if ok && l.ctrl {
			s.operator()
			s.stmt = true
			return nil
		}
		s.operand()
		if ok && l.params {
			s.pendingBody, s.pendingBodyExpr = true, l.exprFunc
		}
		return nil
	case '}':
		s.i++
		l, ok := s.pop(c)
		if ok && l.open == '$' {
			return s.template()
		}
		if ok && (l.block || l.class) && !l.exprFunc {
			// The end of a block or declaration: a statement follows.
			s.operator()
			s.stmt = true
			s.endStatement()
			return nil
		}
		s.operand()
		return nil
	case ';':
		s.i++
		s.reset()
		s.operator()
		s.stmt = true
		return nil
	case ',':
		s.i++
		s.reset()
		s.operator()
		return nil
	case '?':
		if s.at(1) == '.' && !(s.at(2) >= '0' && s.at(2) <= '9') {
			s.i += 2 // optional chaining
			s.prev = operandNext
			return s.chain()
		}
		if s.at(1) == '?' {
			s.i += 2
			if s.at(0) == '=' {
				s.i++
			}
			s.operator()
			return s.chain()
		}
		s.i++
		s.cur().questions++
		s.operator()
		return s.chain()
	case ':':
		s.i++
		l := s.cur()
		if l.questions > 0 {
			l.questions--
			s.operator()
			return s.chain()
		}
		if l.open == '{' && !l.block {
			// An object literal's property value.
			s.operator()
			return s.chain()
		}
		// A label or a case: a statement follows.
		s.operator()
		s.stmt = true
		return s.chain()
	case '=':
		if s.at(1) == '>' {
			s.i += 2
			s.operator()
			s.arrow = true
			return s.chain()
		}
	case '.':
		if s.at(1) == '.' && s.at(2) == '.' {
			s.i += 3
			s.beforeOperand()
			s.operator()
			return nil
		}
		s.i++
		s.prev = operandNext
		return s.chain()
	case '+', '-':
		if s.at(1) == c {
			s.i += 2
			if s.prev == operatorNext {
				// Postfix: the operand goes on.
				s.newline = false
				return s.chain()
			}
			s.operator()
			return s.chain()
		}
	}
	if c == '*' && s.prev == operandNext {
		// '*' cannot start an operand: this is function*, a generator
		// method or yield*.
		s.info.Generators = true
	}
	// Any other operator. The unary-only ones start a new statement
	// after an operand on a new line.
	if c == '!' || c == '~' {
		s.beforeOperand()
	}
	s.i += operatorLen(s.src[s.i:])
	s.operator()
	return s.chain()
}

// operators lists JavaScript's multi-character punctuators, longest first.
var operators = []string{">>>=", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=",
	"==", "!=", "<=", ">=", "&&", "||", "**", "<<", ">>", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="}

// operatorLen returns the length of the punctuator at the start of s (1
// for anything that is not a multi-character one).
func operatorLen(s string) int {
	for _, op := range operators {
		if len(s) >= len(op) && s[:len(op)] == op {
			return len(op)
		}
	}
	return 1
}

// endStatement starts a new statement after a block's '}' unless a
// continuation (else, catch, finally, while of do-while) follows, which
// extends the same statement's nesting.
func (s *scanner) endStatement() {
	j := s.i
	for j < len(s.src) && (s.src[j] == ' ' || s.src[j] == '\t' || s.src[j] == '\n' || s.src[j] == '\r') {
		j++
	}
	for _, kw := range []string{"else", "catch", "finally", "while"} {
		if len(s.src)-j >= len(kw) && s.src[j:j+len(kw)] == kw && (j+len(kw) == len(s.src) || !isIdentPart(s.src[j+len(kw)])) {
			return
		}
	}
	s.reset()
}

// inClassOrObject reports whether the current level is an object literal
// or a class body, where `name(` starts a method.
func (s *scanner) inClassOrObject() bool {
	l := s.cur()
	return l.open == '{' && !l.block
}
