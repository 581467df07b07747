// Package jsonval decodes JSON text into the generic Go values JSON Schema
// validation works on — map[string]any, []any, string, json.Number, bool
// and nil — in one pass over a byte slice. It gives the same values as
// encoding/json's Decoder with UseNumber (what the jsonschema library's own
// UnmarshalJSON uses) at a fraction of the allocations, which matters on
// the per-call path of every tool call.
package jsonval

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds nesting.
const MaxDepth = 10000

// ErrSyntax is wrapped by every error Decode returns.
var ErrSyntax = errors.New("invalid JSON")

// ErrTooDeep is wrapped, with ErrSyntax, by Decode's error for a value
// nested more than MaxDepth levels deep.
var ErrTooDeep = fmt.Errorf("nesting deeper than %d", MaxDepth)

// ErrMergedNames is wrapped by Decode's error for an object two of whose
// property names become one once unpaired surrogate escapes and invalid
// UTF-8 are replaced by U+FFFD ({"\ud800": 1, "\ud801": 2}): the value
// would hold one property where the text has two, and whatever checks
// the value (a schema) would not see what a reader of the text gets.
var ErrMergedNames = errors.New("two property names differ only in unpaired surrogates or invalid UTF-8")

// Decode decodes one JSON value; trailing whitespace is allowed, trailing
// data is an error.
func Decode(data []byte) (any, error) {
	s := Scanner{data: data, maxDepth: MaxDepth}
	t, err := s.Next()
	if err != nil {
		return nil, err
	}
	v, err := decodeValue(&s, t)
	if err != nil {
		return nil, err
	}
	if _, err := s.Next(); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeValue builds the value that starts with token t.
func decodeValue(s *Scanner, t Token) (any, error) {
	switch t.Kind {
	case BeginObject:
		m := map[string]any{}
		for {
			k, err := s.Next()
			if err != nil {
				return nil, err
			}
			if k.Kind == EndObject {
				return m, nil
			}
			name, _, err := ReadString(s.Data(), k.Start, false)
			if err != nil {
				return nil, err
			}
			vt, err := s.Next()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(s, vt)
			if err != nil {
				return nil, err
			}
			if _, dup := m[name]; dup && strings.ContainsRune(name, utf8.RuneError) {
				return nil, fmt.Errorf("%w at offset %d: %w", ErrSyntax, s.Offset(), ErrMergedNames)
			}
			m[name] = v
		}
	case BeginArray:
		a := []any{}
		for {
			it, err := s.Next()
			if err != nil {
				return nil, err
			}
			if it.Kind == EndArray {
				return a, nil
			}
			v, err := decodeValue(s, it)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case String:
		v, _, err := ReadString(s.Data(), t.Start, false)
		return v, err
	case Number:
		return json.Number(s.Data()[t.Start:t.End]), nil
	case True:
		return true, nil
	case False:
		return false, nil
	case Null:
		return nil, nil
	}
	return nil, s.Errorf("unexpected token")
}

// ErrLoneSurrogate is returned by ReadString in strict mode for an
// unpaired UTF-16 surrogate escape.
var ErrLoneSurrogate = errors.New("lone surrogate escape")

func syntaxAt(pos int, msg string) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, pos, msg)
}

// ScanNumber scans the JSON number that starts at data[pos] and returns
// the offset just after it and whether it is an integer literal (no
// fraction, no exponent).
func ScanNumber(data []byte, pos int) (end int, isInt bool, err error) {
	i := pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
			n++
		}
		return n
	}
	intStart := i
	if n := digits(); n == 0 || (n > 1 && data[intStart] == '0') {
		return i, false, syntaxAt(i, "invalid number")
	}
	isInt = true
	if i < len(data) && data[i] == '.' {
		isInt = false
		i++
		if digits() == 0 {
			return i, false, syntaxAt(i, "invalid number")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		isInt = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, false, syntaxAt(i, "invalid number")
		}
	}
	return i, isInt, nil
}

// ReadString decodes the JSON string whose opening quote is data[pos] and
// returns it with the offset just after the closing quote. Invalid UTF-8
// becomes U+FFFD, as encoding/json does; so does an unpaired surrogate
// escape, unless strict is set, in which case it returns ErrLoneSurrogate
// (for callers that can represent it some other way).
func ReadString(data []byte, pos int, strict bool) (string, int, error) {
	i := pos + 1
	start := i
	for i < len(data) {
		c := data[i]
		if c == '"' {
			s := data[start:i]
			if utf8.Valid(s) {
				return string(s), i + 1, nil
			}
			return string([]rune(string(s))), i + 1, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", i, syntaxAt(i, "control character in string")
		}
		i++
	}
	buf := make([]byte, 0, i-start+16)
	buf = append(buf, data[start:i]...)
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			if utf8.Valid(buf) {
				return string(buf), i + 1, nil
			}
			return string([]rune(string(buf))), i + 1, nil
		case c < 0x20:
			return "", i, syntaxAt(i, "control character in string")
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		i++
		if i >= len(data) {
			break
		}
		e := data[i]
		i++
		if b, ok := Unescape(e); ok {
			buf = append(buf, b)
			continue
		}
		switch e {
		case 'u':
			r, ok := Hex4(data, i)
			if !ok {
				return "", i, syntaxAt(i, "invalid \\u escape")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				paired := false
				if i+6 <= len(data) && data[i] == '\\' && data[i+1] == 'u' {
					if r2, ok := Hex4(data, i+2); ok {
						if dr := utf16.DecodeRune(r, r2); dr != utf8.RuneError {
							r, paired = dr, true
							i += 6
						}
					}
				}
				if !paired {
					if strict {
						return "", i, ErrLoneSurrogate
					}
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", i, syntaxAt(i, "invalid escape")
		}
	}
	return "", i, syntaxAt(i, "unterminated string")
}

// Unescape returns the character a one-letter JSON escape (\n, \", …)
// stands for; false for 'u' and for letters that are no escape.
func Unescape(e byte) (byte, bool) {
	switch e {
	case '"', '\\', '/':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// Hex4 reads the four hexadecimal digits of a \u escape at data[i:]: the
// code unit, and false when there are not four hex digits.
func Hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
