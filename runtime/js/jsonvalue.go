package js

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/jsonval"
)

// maxJSONDepth bounds the nesting of JSON values converted into the VM.
const maxJSONDepth = 10000

// errJSON reports malformed JSON (tool results are validated before they
// get here, so this means a bug or a hostile producer).
var errJSON = errors.New("invalid JSON")

// errJSONDepth reports JSON nested more than maxJSONDepth levels deep.
var errJSONDepth = fmt.Errorf("nesting deeper than %d", maxJSONDepth)

// jsonDecoder converts JSON text straight into goja values: real JS
// objects, arrays, strings and numbers (never lazy Go wrappers), in one
// pass and without an intermediate Go representation. It is JSON.parse
// and the hot path of tool results and input, several times faster than
// goja's JSON.parse, which goes through encoding/json's token stream —
// and, unlike it, it follows the specification where encoding/json
// cannot: an out-of-range number is ±Infinity, and an unpaired surrogate
// escape ("\ud800") stays an unpaired surrogate, in values and in
// property names alike.
type jsonDecoder struct {
	vm    *goja.Runtime
	x     *exec // for property names with no exact Go form (jsonkeys.go)
	data  []byte
	pos   int
	depth int
	// wtf: data is WTF-8 (see jsonText), not UTF-8: it came from a JS string
	// holding unpaired surrogates, encoded as UTF-8 encodes code points.
	wtf bool
	// keys interns property names: tool results repeat the same few.
	keys map[string]string
}

// decodeJSON converts data; keys, when not nil, is the intern table to use
// (an execution keeps one across tool results); x, when not nil, writes
// the property names that have no exact Go form (without it they become
// U+FFFD).
func decodeJSON(vm *goja.Runtime, x *exec, data []byte, wtf bool, keys map[string]string) (v goja.Value, err error) {
	d := &jsonDecoder{vm: vm, x: x, data: data, wtf: wtf, keys: keys}
	d.skipSpace()
	v, err = d.value()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, d.errorf("unexpected data after the value")
	}
	return v, nil
}

func (d *jsonDecoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", errJSON, d.pos, fmt.Sprintf(format, args...))
}

func (d *jsonDecoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value() (goja.Value, error) {
	if d.pos >= len(d.data) {
		return nil, d.errorf("unexpected end")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		if s.v != nil {
			return s.v, nil
		}
		return d.vm.ToValue(s.s), nil
	case c == 't':
		return d.literal("true", goja.Value(d.vm.ToValue(true)))
	case c == 'f':
		return d.literal("false", goja.Value(d.vm.ToValue(false)))
	case c == 'n':
		return d.literal("null", goja.Null())
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	default:
		return nil, d.errorf("unexpected character %s", d.charAt())
	}
}

// charAt names the character at the decoder's position for an error: as
// Go quotes it, or as a \u escape for an unpaired surrogate of WTF-8 text
// (a byte of invalid UTF-8 is U+FFFD).
func (d *jsonDecoder) charAt() string {
	b := d.data[d.pos:]
	if d.wtf && len(b) >= 3 && b[0] == 0xed && b[1]&0xe0 == 0xa0 {
		return fmt.Sprintf("'\\u%04x'", 0xd000|rune(b[1]&0x3f)<<6|rune(b[2]&0x3f))
	}
	r, _ := utf8.DecodeRune(b)
	return fmt.Sprintf("%q", r)
}

func (d *jsonDecoder) literal(word string, v goja.Value) (goja.Value, error) {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return nil, d.errorf("invalid literal")
	}
	d.pos += len(word)
	return v, nil
}

func (d *jsonDecoder) enter() error {
	d.depth++
	if d.depth > maxJSONDepth {
		return fmt.Errorf("%w at offset %d: %w", errJSON, d.pos, errJSONDepth)
	}
	return nil
}

func (d *jsonDecoder) object() (goja.Value, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	d.pos++ // {
	obj := d.vm.NewObject()
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return obj, nil
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errorf("expected a property name")
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if d.keys != nil && k.v == nil {
			if ik, ok := d.keys[k.s]; ok {
				k.s = ik
			} else if len(d.keys) < 4096 {
				d.keys[k.s] = k.s
			}
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errorf("expected ':'")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		switch {
		case k.v != nil && d.x != nil:
			d.x.defineKey(obj, k, v)
		case k.s == "__proto__":
			// JSON.parse creates an own property, never a prototype.
			if err := obj.DefineDataProperty(k.s, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE); err != nil {
				return nil, err
			}
		default:
			if err := obj.Set(k.s, v); err != nil {
				return nil, err
			}
		}
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end in object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return obj, nil
		default:
			return nil, d.errorf("expected ',' or '}'")
		}
	}
}

func (d *jsonDecoder) array() (goja.Value, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	d.pos++ // [
	var items []any
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return d.vm.NewArray(), nil
	}
	for {
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end in array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return d.vm.NewArray(items...), nil
		default:
			return nil, d.errorf("expected ',' or ']'")
		}
	}
}

func (d *jsonDecoder) number() (goja.Value, error) {
	end, isInt, err := jsonval.ScanNumber(d.data, d.pos)
	if err != nil {
		return nil, err
	}
	lit := string(d.data[d.pos:end])
	d.pos = end
	if isInt && len(lit) <= 16 {
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil && !(n == 0 && lit[0] == '-') {
			return d.vm.ToValue(n), nil
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, d.errorf("invalid number")
	}
	if math.IsInf(f, 0) || err != nil {
		// JSON.parse gives ±Infinity for out-of-range literals.
		if lit[0] == '-' {
			f = math.Inf(-1)
		} else {
			f = math.Inf(1)
		}
	}
	return d.vm.ToValue(f), nil
}

// str reads a JSON string: a Go string when it has one (the common
// case), else the JS string itself (unpaired surrogates, from escapes or,
// in WTF-8 text, from the text). Invalid UTF-8 becomes U+FFFD.
func (d *jsonDecoder) str() (jsonKey, error) {
	if !d.wtf {
		s, end, err := jsonval.ReadString(d.data, d.pos, true)
		if !errors.Is(err, jsonval.ErrLoneSurrogate) {
			d.pos = end
			return jsonKey{s: s}, err
		}
	}
	u, end, err := readUTF16(d.data, d.pos, d.wtf)
	d.pos = end
	if err != nil {
		return jsonKey{}, err
	}
	return exactKey(goja.StringFromUTF16(u)), nil
}
