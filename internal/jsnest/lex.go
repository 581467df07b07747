package jsnest

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

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

// skipNumber skips a numeric literal: a '.' after it, or a second one in
// it, is a member access (1..toString(), 1.5.toFixed()), and a name right
// after it is not part of it.
func (s *scanner) skipNumber() {
	digits := func(ok func(byte) bool) {
		for s.i < len(s.src) && (ok(s.src[s.i]) || s.src[s.i] == '_') {
			s.i++
		}
	}
	decimal := func(c byte) bool { return c >= '0' && c <= '9' }
	if s.src[s.i] == '0' && (s.at(1)|0x20 == 'x' || s.at(1)|0x20 == 'b' || s.at(1)|0x20 == 'o') {
		s.i += 2
		digits(func(c byte) bool { return decimal(c) || c|0x20 >= 'a' && c|0x20 <= 'f' })
	} else {
		digits(decimal)
		if s.at(0) == '.' {
			s.i++
			digits(decimal)
		}
		if s.at(0)|0x20 == 'e' && (decimal(s.at(1)) || (s.at(1) == '+' || s.at(1) == '-') && decimal(s.at(2))) {
			s.i += 2
			digits(decimal)
		}
	}
	if s.at(0) == 'n' {
		s.i++
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
			s.unclosedKind = 0
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
		if c >= utf8.RuneSelf {
			// A space or line terminator beyond ASCII ends the word, as
			// it does for goja (return\u0085/re/ is return, then /re/).
			r, n := utf8.DecodeRuneInString(s.src[s.i:])
			if unicode.IsSpace(r) || r == '\ufeff' {
				break
			}
			s.i += n
			continue
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
	member := s.punctBefore == '.'
	s.punctBefore = 0
	if member {
		// A property name after '.', whatever its spelling.
		s.operand()
		return nil
	}
	s.beforeOperand()
	stmt, prevKw := s.stmt, s.kw
	switch w {
	case "if", "while", "for", "with", "else", "do", "try", "finally", "switch", "catch":
		if w == "with" {
			s.info.Access = true
		}
		s.operator()
		s.kw = w
		if w == "else" || w == "do" || w == "try" || w == "finally" || w == "catch" && s.nextByte() == '{' {
			s.stmt = true
		}
		if w == "if" || w == "while" || w == "for" || w == "with" || w == "else" {
			return s.chain()
		}
		return nil
	case "of":
		switch {
		case s.prev == operandNext:
			// After an operator or at a statement's start: a name.
			s.operand()
			return nil
		case !s.newline:
			// After an operand on its line: the keyword of for (… of …)
			// (anywhere else the parser refuses it).
			s.operator()
			return s.chain()
		}
		// After an operand on a new line: the keyword in a for head, a
		// name after an inserted semicolon. A '/' after it is refused.
		s.operator()
		s.kw = w
		return s.chain()
	case "return", "throw", "case", "typeof", "void", "delete", "new", "in", "instanceof", "yield", "await", "extends":
		if (w == "yield" || w == "await") && s.nextIncrement() {
			// A name with a postfix ++ (or --) outside a generator or an
			// async function, a prefix one's operator inside: the scan
			// cannot tell which, nor so how a '/' after it reads.
			line, col := s.position(start)
			return &Error{Line: line, Column: col, Depth: len(s.stack), Limit: Slash}
		}
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
		if w == "let" {
			if b := s.nextByte(); !(isIdentStart(b) || b == '[' || b == '{' || b >= utf8.RuneSelf) {
				// Not a declaration (no binding follows): a name, as
				// goja reads it in code that is not strict (let++, let / 2).
				s.operand()
				return nil
			}
		}
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

// nextAt returns the offset of the first byte after s.i that is not an
// ASCII space or line terminator (len(s.src) at the end).
func (s *scanner) nextAt() int {
	j := s.i
	for j < len(s.src) && strings.IndexByte(" \t\n\r\v\f", s.src[j]) >= 0 {
		j++
	}
	return j
}

// nextByte returns the byte at nextAt (0 at the end).
func (s *scanner) nextByte() byte {
	if j := s.nextAt(); j < len(s.src) {
		return s.src[j]
	}
	return 0
}

// nextIncrement reports whether the next token is ++ or --.
func (s *scanner) nextIncrement() bool {
	j := s.nextAt()
	return j+1 < len(s.src) && (s.src[j] == '+' || s.src[j] == '-') && s.src[j+1] == s.src[j]
}
