package jsnest

import (
	"strings"
	"unicode/utf8"
)

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
	j := s.i
	for j < len(s.src) && isIdentPart(s.src[j]) && s.src[j] < utf8.RuneSelf {
		j++
	}
	if !reserved[s.src[s.i:j]] {
		// Flags: goja takes the name after the closing '/' as flags
		// only when it is not a keyword (/a/in b is an in operator).
		s.i = j
	}
	if s.watch != nil {
		s.info.Patterns = append(s.info.Patterns, Pattern{Source: pattern, Flags: s.src[end+1 : s.i]})
	}
	// Should the parser read the '/' as a division (the scan's reading
	// of a '/' has been wrong before), the pattern is code: it counts as
	// property reads and names, and each bracket in it as a level.
	s.patternAsCode(pattern)
	d := RegExpDepth(pattern)
	if o := strings.Count(pattern, "(") + strings.Count(pattern, "[") + strings.Count(pattern, "{"); o > d {
		d = o
	}
	if len(s.stack)+d > Max && !s.full {
		line, col := s.position(start)
		return &Error{Line: line, Column: col, Depth: len(s.stack) + d, Bound: Max}
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
		return &Error{Line: 1, Column: 1, Depth: d, Bound: Max}
	}
	return nil
}

// patternAsCode records what a regular expression's text would read and
// name if it were code.
func (s *scanner) patternAsCode(pattern string) {
	if strings.ContainsAny(pattern, ".[") {
		s.info.Access = true
	}
	if s.watch == nil {
		return
	}
	for i := 0; i < len(pattern); {
		if !isIdentStart(pattern[i]) || pattern[i] == '\\' {
			i++
			continue
		}
		j := i
		for j < len(pattern) && isIdentPart(pattern[j]) && pattern[j] != '\\' {
			j++
		}
		if bit, ok := s.watch[pattern[i:j]]; ok {
			s.info.Names |= 1 << bit
		}
		i = j
	}
}

// reserved are JavaScript's reserved words: the parser reads none of them
// as a regular expression's flags.
var reserved = map[string]bool{
	"await": true, "break": true, "case": true, "catch": true, "class": true, "const": true, "continue": true,
	"debugger": true, "default": true, "delete": true, "do": true, "else": true, "enum": true, "export": true,
	"extends": true, "false": true, "finally": true, "for": true, "function": true, "if": true, "import": true,
	"in": true, "instanceof": true, "new": true, "null": true, "return": true, "super": true, "switch": true,
	"this": true, "throw": true, "true": true, "try": true, "typeof": true, "var": true, "void": true,
	"while": true, "with": true, "yield": true,
}
