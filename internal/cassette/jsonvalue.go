package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// decode parses one JSON value, keeping numbers exact.
func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// Equal reports whether a and b hold the same JSON value: object key order,
// white space and number spelling (1, 1.0, 1e0) do not matter. Invalid JSON
// is equal to nothing.
func Equal(a, b []byte) bool {
	va, err := decode(a)
	if err != nil {
		return false
	}
	vb, err := decode(b)
	if err != nil {
		return false
	}
	return equalValue(va, vb)
}

func equalValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && equalNumber(x, y)
	default: // string, bool, nil
		return a == b
	}
}

func equalNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	if !exact(string(a)) || !exact(string(b)) {
		// Exact comparison of such numbers would cost time and memory
		// in proportion to their exponent: compare them as doubles.
		fa, err1 := strconv.ParseFloat(string(a), 64)
		fb, err2 := strconv.ParseFloat(string(b), 64)
		return err1 == nil && err2 == nil && fa == fb
	}
	ra, ok1 := new(big.Rat).SetString(string(a))
	rb, ok2 := new(big.Rat).SetString(string(b))
	return ok1 && ok2 && ra.Cmp(rb) == 0
}

// exact reports whether a JSON number is short enough, with a small
// enough exponent, to compare exactly.
func exact(s string) bool {
	if len(s) > 64 {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	return err == nil && e > -400 && e < 400
}

// Contains reports whether value holds pattern: every key of a pattern
// object must be in the value object with a value that holds the pattern's
// (recursively); arrays and scalars must be equal. An empty pattern (or
// JSON null as the whole pattern) matches anything.
func Contains(value, pattern []byte) bool {
	if len(bytes.TrimSpace(pattern)) == 0 {
		return true
	}
	p, err := decode(pattern)
	if err != nil {
		return false
	}
	if p == nil {
		return true
	}
	v, err := decode(value)
	if err != nil {
		return false
	}
	return containsValue(v, p)
}

func containsValue(v, p any) bool {
	po, ok := p.(map[string]any)
	if !ok {
		return equalValue(v, p)
	}
	vo, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, pv := range po {
		vv, ok := vo[k]
		if !ok || !containsValue(vv, pv) {
			return false
		}
	}
	return true
}

// Diff returns up to max lines describing how want and got differ, one per
// differing JSON pointer: `/quarter: "Q3" → "Q2"`, `/3: missing → {…}`.
// Values are shown compact and shortened. It returns nil when they are
// equal, and one line saying so when either side is not valid JSON.
func Diff(want, got []byte, max int) []string {
	w, err := decode(want)
	if err != nil {
		return []string{"the recorded side is not valid JSON: " + err.Error()}
	}
	g, err := decode(got)
	if err != nil {
		return []string{"the actual side is not valid JSON: " + err.Error()}
	}
	d := differ{max: max}
	d.walk("", w, g)
	if d.more > 0 {
		d.lines = append(d.lines, fmt.Sprintf("… and %d more differences", d.more))
	}
	return d.lines
}

type differ struct {
	max   int
	lines []string
	more  int
}

func (d *differ) add(path, was, now string) {
	if len(d.lines) >= d.max {
		d.more++
		return
	}
	if path == "" {
		path = "(root)"
	}
	d.lines = append(d.lines, path+": "+was+" → "+now)
}

func (d *differ) walk(path string, w, g any) {
	wo, wok := w.(map[string]any)
	gobj, gok := g.(map[string]any)
	if wok && gok {
		keys := make([]string, 0, len(wo)+len(gobj))
		for k := range wo {
			keys = append(keys, k)
		}
		for k := range gobj {
			if _, ok := wo[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "/" + escapePointer(k)
			wv, win := wo[k]
			gv, gin := gobj[k]
			switch {
			case !win:
				d.add(p, "missing", Compact(gv, 80))
			case !gin:
				d.add(p, Compact(wv, 80), "missing")
			default:
				d.walk(p, wv, gv)
			}
		}
		return
	}
	wa, wok := w.([]any)
	ga, gok := g.([]any)
	if wok && gok {
		n := max(len(wa), len(ga))
		for i := 0; i < n; i++ {
			p := path + "/" + strconv.Itoa(i)
			switch {
			case i >= len(wa):
				d.add(p, "missing", Compact(ga[i], 80))
			case i >= len(ga):
				d.add(p, Compact(wa[i], 80), "missing")
			default:
				d.walk(p, wa[i], ga[i])
			}
		}
		return
	}
	if !equalValue(w, g) {
		d.add(path, Compact(w, 80), Compact(g, 80))
	}
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// Compact renders a decoded JSON value (or a json.RawMessage / []byte of
// JSON) on one line, shortened to about n bytes with "…".
func Compact(v any, n int) string {
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		b = compactRaw(x)
	case []byte:
		b = compactRaw(x)
	default:
		b, _ = json.Marshal(x)
	}
	s := string(b)
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func compactRaw(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }
