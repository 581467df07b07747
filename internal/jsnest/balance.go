package jsnest

import (
	"fmt"
	"strings"
)

// Imbalance is what keeps a script's brackets from balancing, as Balance
// finds it.
type Imbalance struct {
	// Extra: a closing bracket (What) that closes nothing. Otherwise What
	// is the innermost construct still open at the end of the text.
	Extra bool
	// What names the bracket or construct: "'}'", "'('", "'${'", "template
	// literal", "comment".
	What string
	// Line and Column (1-based, in bytes) are where it is.
	Line, Column int
	// Open is, for an Extra bracket that meets another kind open ("f([1)"),
	// that bracket, at OpenLine and OpenColumn; empty otherwise.
	Open                 string
	OpenLine, OpenColumn int
}

// Balance scans src as Check does and reports the first closing bracket
// that closes nothing, or else the innermost bracket, template literal or
// comment left open at the end of src; ok is false when everything
// closes. Strings end at their line, so an unterminated one is not
// reported here.
func Balance(src string) (u Imbalance, ok bool) {
	s := scanner{src: src, full: true}
	_ = s.run()
	if s.extra > 0 {
		line, col := s.position(s.extra - 1)
		u := Imbalance{Extra: true, What: quoteBracket(src[s.extra-1]), Line: line, Column: col}
		if s.extraOpen > 0 {
			u.Open = quoteBracket(s.extraOpenC)
			u.OpenLine, u.OpenColumn = s.position(s.extraOpen - 1)
		}
		return u, true
	}
	off, what := -1, ""
	if n := len(s.opens); n > 0 {
		off, what = s.opens[n-1], quoteBracket(s.stack[n-1].open)
	}
	if s.unclosedKind != 0 && s.unclosed > off {
		off, what = s.unclosed, "template literal"
		if s.unclosedKind == '*' {
			what = "comment"
		}
	}
	if off < 0 {
		return Imbalance{}, false
	}
	line, col := s.position(off)
	return Imbalance{What: what, Line: line, Column: col}, true
}

func quoteBracket(c byte) string {
	if c == '$' {
		return "'${'"
	}
	return "'" + string(c) + "'"
}

// Message explains the imbalance of a script that is the body of a
// function: an extra '}' would close that function.
func (u Imbalance) Message() string {
	if u.Extra && u.Open != "" {
		closer := map[string]string{"'('": "')'", "'['": "']'", "'{'": "'}'", "'${'": "'}'"}[u.Open]
		return fmt.Sprintf("unbalanced brackets: this %s comes before the %s opened at line %d, column %d is closed: close it with %s first, or remove the %s",
			u.What, u.Open, u.OpenLine, u.OpenColumn, closer, u.What)
	}
	if u.Extra {
		if u.What == "'}'" {
			return "unbalanced braces: this '}' closes nothing (the script is the body of a function, which it would close): remove it or add the missing '{'"
		}
		open := map[string]string{"')'": "'('", "']'": "'['"}[u.What]
		return fmt.Sprintf("unbalanced brackets: this %s closes nothing: remove it or add the missing %s", u.What, open)
	}
	return fmt.Sprintf("unexpected end of script: the %s opened at line %d, column %d is not closed", u.What, u.Line, u.Column)
}

// EndOfScript is the message for a parser that ran out of text when
// Balance finds nothing open: it names what may be open.
const EndOfScript = "unexpected end of script: close every '{', '(', '[', string, template literal and comment"

// ClosesWrapper is the message for a script that closes the function it
// is the body of (and opens another, so that the text still parses): the
// program would no longer be that one function.
const ClosesWrapper = "unbalanced braces: a '}' closes the function the script runs in; remove it or add the missing '{'"

// LastChar returns the 1-based line and byte column of the last
// character of src that is not white space: where a script that ends too
// early is reported (1, 1 for blank text).
func LastChar(src string) (line, col int) {
	trimmed := strings.TrimRight(src, " \t\r\n\v\f")
	if trimmed == "" {
		return 1, 1
	}
	line = 1 + strings.Count(trimmed, "\n")
	return line, len(trimmed) - strings.LastIndexByte(trimmed, '\n') - 1
}

// closedNothing records, for Balance, the first closing bracket (just
// before s.i) that closed nothing.
func (s *scanner) closedNothing() {
	if s.extra == 0 {
		s.extra = s.i
		if n := len(s.opens); n > 0 {
			s.extraOpen, s.extraOpenC = s.opens[n-1]+1, s.stack[n-1].open
		}
	}
}
