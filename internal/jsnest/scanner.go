package jsnest

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

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
	// patternNext: the previous token was '(' or ','; a '{' here may open
	// a destructuring pattern.
	patternNext bool
	// objectClosed: the previous token was the '}' of an object literal;
	// an '=' after it makes the literal a pattern.
	objectClosed bool
	// newline: a line terminator since the previous token.
	newline bool
	// punctBefore is the previous token when it was `.` (or `?.`), after
	// which a word is a property name whatever its spelling, or '}' (of a
	// block, a body, an object literal or a class: the scan cannot tell
	// them apart everywhere the parser can, and a '/' after one may begin
	// a regular expression or divide); 0 after any other token.
	punctBefore byte
	// max is the deepest estimate so far.
	max int
	// full: scan to the end, past Max (Depth).
	full   bool
	info   Info
	watch  map[string]uint
	bounds Bounds
	// For Balance: opens holds the offset of each bracket of stack; extra
	// is one past the offset of the first closing bracket that closed
	// nothing (0: none); unclosed is the offset of the comment or template
	// literal the text ends in, with unclosedKind '*' or '`' (0: none).
	opens        []int
	extra        int
	extraOpen    int // one past the offset of the bracket it did not match
	extraOpenC   byte
	unclosed     int
	unclosedKind byte
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
		return &Error{Line: line, Column: col, Depth: d, Limit: Estimate, Bound: Max}
	}
	return nil
}

// bound returns an Error with limit at the token starting at off.
func (s *scanner) bound(limit Limit, bound, off int) *Error {
	line, col := s.position(off)
	return &Error{Line: line, Column: col, Depth: s.depth(), Limit: limit, Bound: bound}
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
	off := s.i - 1 // the bracket (s.i is just past it)
	if l.open == '$' {
		off-- // "${"
	}
	s.opens = append(s.opens, off)
	if b := s.bounds.Brackets; b > 0 && len(s.stack) > b {
		return s.bound(Brackets, b, off)
	}
	return s.check()
}

// pop closes the innermost level if it matches c and returns it.
func (s *scanner) pop(c byte) (level, bool) {
	if len(s.stack) == 0 {
		s.closedNothing()
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
		s.closedNothing()
		return level{}, false
	}
	s.stack = s.stack[:len(s.stack)-1]
	s.opens = s.opens[:len(s.opens)-1]
	s.sumRun -= l.run
	return l, true
}

func (s *scanner) run() *Error {
	s.stmt = true
	if strings.HasPrefix(s.src, "#!") {
		// goja skips a hashbang line at the start of the text (eval's
		// text starts there) as a comment.
		s.skipLine()
	}
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\n' || c == '\r':
			s.lineEnds()
			s.i++
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			s.i++
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s.src[s.i:])
			switch r {
			case '\u2028', '\u2029':
				s.lineEnds()
				s.i += n
			default:
				// goja skips what unicode.IsSpace accepts (U+0085 among
				// them) and the byte order mark.
				if unicode.IsSpace(r) || r == '\ufeff' {
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
				s.unclosed, s.unclosedKind = s.i, '*'
				return nil // unterminated comment: the parser reports it
			}
			// A line break in a comment is a line end (a semicolon may be
			// inserted at it).
			if c := s.src[s.i:end]; strings.ContainsAny(c, "\n\r") || strings.Contains(c, "\u2028") || strings.Contains(c, "\u2029") {
				s.lineEnds()
			}
			s.i = end + 2
		case c == '\'' || c == '"':
			s.punctBefore = 0
			s.beforeOperand()
			s.skipString(c)
			s.operand()
		case c == '`':
			s.punctBefore = 0
			if s.prev == operatorNext && !s.newline {
				// A tagged template calls its tag.
				if err := s.chain(); err != nil {
					return err
				}
			} else {
				s.beforeOperand()
			}
			s.unclosed, s.unclosedKind = s.i, '`'
			s.i++
			if err := s.template(); err != nil {
				return err
			}
		case c == '/' && (s.punctBefore == '}' || s.newline && s.prev == operatorNext) && regexpWouldHide(s.src, s.i):
			// After a '}' or at the start of a line after an operand,
			// the scan's reading of a '/' may not be the parser's (a
			// block taken for an object, a declaration for an
			// expression, a semicolon inserted): if a regular expression
			// there would hold what one reading takes for a string, a
			// template, a comment or a bracket, and the other for code,
			// the text is refused.
			line, col := s.position(s.i)
			return &Error{Line: line, Column: col, Depth: len(s.stack), Limit: Slash}
		case c == '/' && s.prev == operandNext:
			s.punctBefore = 0
			switch s.kw {
			case "of", "yield", "await":
				line, col := s.position(s.i)
				return &Error{Line: line, Column: col, Depth: len(s.stack), Limit: Slash}
			}
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
			s.punctBefore = 0
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
	s.patternNext, s.objectClosed = false, false
}

// operator records a token after which an operand is expected.
func (s *scanner) operator() {
	s.prev = operandNext
	s.stmt = false
	s.kw = ""
	s.arrow = false
	s.newline = false
	s.pendingBody = false
	s.patternNext, s.objectClosed = false, false
}

// lineEnds notes a line terminator. After return, break, continue or
// throw, one ends the statement (a semicolon is inserted): what follows
// starts a statement (a '{' is a block).
func (s *scanner) lineEnds() {
	s.newline = true
	switch s.kw {
	case "return", "break", "continue", "throw":
		s.reset()
		s.operator()
		s.stmt = true
	}
}

// regexpWouldHide reports whether a regular expression literal starting
// at the '/' at i would hold a quote, a backquote, a bracket or a
// comment's start: what a scan reading the '/' as a division would take
// for a string, a template, a comment or the end of a level running past
// the literal's end (and a scan reading it as a regular expression would
// skip, when the parser reads code).
func regexpWouldHide(src string, i int) bool {
	end := RegExpEnd(src, i+1)
	if end < 0 {
		return false
	}
	body := src[i+1 : end]
	return strings.ContainsAny(body, "'\"`(){}[]") || strings.Contains(body, "/*") || strings.Contains(body, "//")
}
