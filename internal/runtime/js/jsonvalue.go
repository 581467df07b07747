package js

import (
	"errors"
	"math"
	"strconv"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/jsonval"
)

// jsonDecoder converts JSON text straight into goja values: real JS
// objects, arrays, strings and numbers (never lazy Go wrappers), in one
// pass and without an intermediate Go representation. It is JSON.parse
// and the hot path of tool results and input, several times faster than
// goja's JSON.parse, which goes through encoding/json's token stream —
// and, unlike it, it follows the specification where encoding/json
// cannot: an out-of-range number is ±Infinity, and an unpaired surrogate
// escape ("\ud800") stays an unpaired surrogate, in values and in
// property names alike. The grammar is jsonval's Scanner; errors wrap
// jsonval.ErrSyntax (and jsonval.ErrTooDeep past jsonval.MaxDepth).
// maxJSONDepth bounds the nesting of JSON values converted into the VM.
const maxJSONDepth = jsonval.MaxDepth

type jsonDecoder struct {
	vm *goja.Runtime
	x  *exec // for property names with no exact Go form (jsonkeys.go)
	s  jsonval.Scanner
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
func decodeJSON(vm *goja.Runtime, x *exec, data []byte, wtf bool, keys map[string]string) (goja.Value, error) {
	d := &jsonDecoder{vm: vm, x: x, s: *jsonval.NewScanner(data, jsonval.MaxDepth), wtf: wtf, keys: keys}
	t, err := d.s.Next()
	if err != nil {
		return nil, err
	}
	v, err := d.value(t)
	if err != nil {
		return nil, err
	}
	if _, err := d.s.Next(); err != nil {
		return nil, err
	}
	return v, nil
}

// value builds the value that starts with token t.
func (d *jsonDecoder) value(t jsonval.Token) (goja.Value, error) {
	switch t.Kind {
	case jsonval.BeginObject:
		return d.object()
	case jsonval.BeginArray:
		return d.array()
	case jsonval.String:
		s, err := d.str(t)
		if err != nil {
			return nil, err
		}
		if s.v != nil {
			return s.v, nil
		}
		return d.vm.ToValue(s.s), nil
	case jsonval.True:
		return d.vm.ToValue(true), nil
	case jsonval.False:
		return d.vm.ToValue(false), nil
	case jsonval.Null:
		return goja.Null(), nil
	case jsonval.Number:
		return d.number(t)
	}
	return nil, d.s.Errorf("unexpected token")
}

func (d *jsonDecoder) object() (goja.Value, error) {
	obj := d.vm.NewObject()
	for {
		t, err := d.s.Next()
		if err != nil {
			return nil, err
		}
		if t.Kind == jsonval.EndObject {
			return obj, nil
		}
		k, err := d.str(t)
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
		vt, err := d.s.Next()
		if err != nil {
			return nil, err
		}
		v, err := d.value(vt)
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
	}
}

func (d *jsonDecoder) array() (goja.Value, error) {
	var items []any
	for {
		t, err := d.s.Next()
		if err != nil {
			return nil, err
		}
		if t.Kind == jsonval.EndArray {
			return d.vm.NewArray(items...), nil
		}
		v, err := d.value(t)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
}

func (d *jsonDecoder) number(t jsonval.Token) (goja.Value, error) {
	lit := string(d.s.Data()[t.Start:t.End])
	if t.IsInt && len(lit) <= 16 {
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil && !(n == 0 && lit[0] == '-') {
			return d.vm.ToValue(n), nil
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, d.s.Errorf("invalid number")
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

// str reads the JSON string of token t: a Go string when it has one (the
// common case), else the JS string itself (unpaired surrogates, from
// escapes or, in WTF-8 text, from the text). Invalid UTF-8 becomes U+FFFD.
func (d *jsonDecoder) str(t jsonval.Token) (jsonKey, error) {
	if !d.wtf {
		s, _, err := jsonval.ReadString(d.s.Data(), t.Start, true)
		if !errors.Is(err, jsonval.ErrLoneSurrogate) {
			return jsonKey{s: s}, err
		}
	}
	u, _, err := readUTF16(d.s.Data(), t.Start, d.wtf)
	if err != nil {
		return jsonKey{}, err
	}
	return exactKey(goja.StringFromUTF16(u)), nil
}
