package jsnest

func (s *scanner) punct(c byte) *Error {
	s.punctBefore = 0
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
		s.patternNext = true
		return s.push(l)
	case '[':
		s.info.Access = true
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
			if !l.block && (s.patternNext || s.kw == "var" || s.kw == "let" || s.kw == "const") {
				s.info.Access = true // perhaps a destructuring pattern
			}
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
		s.punctBefore = '}'
		if ok && (l.block || l.class) && !l.exprFunc {
			// The end of a block or declaration: a statement follows.
			s.operator()
			s.stmt = true
			s.endStatement()
			return nil
		}
		s.operand()
		s.objectClosed = ok && l.open == '{' && !l.block && !l.class
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
		s.patternNext = true
		return nil
	case '?':
		if s.at(1) == '.' && !(s.at(2) >= '0' && s.at(2) <= '9') {
			s.info.Access = true
			s.i += 2 // optional chaining
			s.prev = operandNext
			s.punctBefore = '.'
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
		if s.objectClosed && s.at(1) != '=' {
			s.info.Access = true // an object pattern: ({a} = b)
		}
		if s.at(1) == '>' {
			s.info.Arrows++
			if b := s.bounds.Arrows; b > 0 && s.info.Arrows > b {
				return s.bound(Arrows, b, s.i)
			}
			s.i += 2
			s.operator()
			s.arrow = true
			return s.chain()
		}
	case '.':
		s.info.Access = true
		if s.at(1) == '.' && s.at(2) == '.' {
			s.i += 3
			s.beforeOperand()
			s.operator()
			return nil
		}
		s.i++
		s.prev = operandNext
		s.punctBefore = '.'
		return s.chain()
	case '+', '-':
		if s.at(1) == c {
			s.i += 2
			if s.prev == operatorNext && !s.newline {
				// Postfix: the operand goes on.
				s.newline = false
				return s.chain()
			}
			// Prefix, a new statement's after an operand on a new line
			// (no line terminator may come before a postfix one).
			s.beforeOperand()
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
