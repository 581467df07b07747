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

type decoder struct {
	data  []byte
	pos   int
	depth int
}

// Decode decodes one JSON value; trailing whitespace is allowed, trailing
// data is an error.
func Decode(data []byte) (any, error) {
	d := &decoder{data: data}
	d.space()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.space()
	if d.pos != len(d.data) {
		return nil, d.errorf("unexpected data after the value")
	}
	return v, nil
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, d.pos, fmt.Sprintf(format, args...))
}

func (d *decoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value() (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.errorf("unexpected end")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == 't':
		return d.literal("true", true)
	case c == 'f':
		return d.literal("false", false)
	case c == 'n':
		return d.literal("null", nil)
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	default:
		return nil, d.errorf("unexpected character %q", c)
	}
}

func (d *decoder) literal(word string, v any) (any, error) {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return nil, d.errorf("invalid literal")
	}
	d.pos += len(word)
	return v, nil
}

func (d *decoder) enter() error {
	if d.depth++; d.depth > MaxDepth {
		return fmt.Errorf("%w at offset %d: %w", ErrSyntax, d.pos, ErrTooDeep)
	}
	return nil
}

func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	d.pos++
	m := map[string]any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errorf("expected a property name")
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errorf("expected ':'")
		}
		d.pos++
		d.space()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup && strings.ContainsRune(k, utf8.RuneError) {
			return nil, fmt.Errorf("%w at offset %d: %w", ErrSyntax, d.pos, ErrMergedNames)
		}
		m[k] = v
		d.space()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end in object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return m, nil
		default:
			return nil, d.errorf("expected ',' or '}'")
		}
	}
}

func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	d.pos++
	a := []any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return a, nil
	}
	for {
		d.space()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.space()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end in array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return a, nil
		default:
			return nil, d.errorf("expected ',' or ']'")
		}
	}
}

func (d *decoder) number() (any, error) {
	end, _, err := ScanNumber(d.data, d.pos)
	if err != nil {
		return nil, err
	}
	n := json.Number(d.data[d.pos:end])
	d.pos = end
	return n, nil
}

func (d *decoder) str() (string, error) {
	s, end, err := ReadString(d.data, d.pos, false)
	d.pos = end
	return s, err
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
