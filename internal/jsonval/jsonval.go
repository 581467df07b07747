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
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds nesting.
const MaxDepth = 10000

// ErrSyntax is wrapped by every error Decode returns.
var ErrSyntax = errors.New("invalid JSON")

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
		return d.errorf("nesting deeper than %d", MaxDepth)
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
	start := d.pos
	if d.data[d.pos] == '-' {
		d.pos++
	}
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	intStart := d.pos
	if n := digits(); n == 0 || (n > 1 && d.data[intStart] == '0') {
		return nil, d.errorf("invalid number")
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return nil, d.errorf("invalid number")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, d.errorf("invalid number")
		}
	}
	return json.Number(d.data[start:d.pos]), nil
}

// str decodes a string the way encoding/json does: invalid UTF-8 and
// unpaired surrogate escapes become U+FFFD.
func (d *decoder) str() (string, error) {
	d.pos++
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s := d.data[start:d.pos]
			d.pos++
			if utf8.Valid(s) {
				return string(s), nil
			}
			return string([]rune(string(s))), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", d.errorf("control character in string")
		}
		d.pos++
	}
	buf := make([]byte, 0, d.pos-start+16)
	buf = append(buf, d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			if utf8.Valid(buf) {
				return string(buf), nil
			}
			return string([]rune(string(buf))), nil
		case c < 0x20:
			return "", d.errorf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			d.pos++
			continue
		}
		d.pos++
		if d.pos >= len(d.data) {
			break
		}
		e := d.data[d.pos]
		d.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", d.errorf("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(utf8.RuneError)
				if d.pos+6 <= len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
					save := d.pos
					d.pos += 2
					if x, ok := d.hex4(); ok {
						if dr := utf16.DecodeRune(r, x); dr != utf8.RuneError {
							r2 = dr
						} else {
							d.pos = save
						}
					} else {
						d.pos = save
					}
				}
				r = r2
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", d.errorf("invalid escape")
		}
	}
	return "", d.errorf("unterminated string")
}

func (d *decoder) hex4() (rune, bool) {
	if d.pos+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
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
	d.pos += 4
	return r, true
}
