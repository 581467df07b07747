package python

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A completion reaches the prelude as a frame: four bytes of length
// (little-endian), then a tuple in CPython's marshal format, which
// marshal.loads turns into objects several times faster than the JSON
// scanner does in this interpreter (compiled without optimisation). The
// tuple is (tag, id, payload):
//
//	(0, id, value)  a result, its JSON converted here
//	(1, id, text)   a result as JSON text (bytes), for the prelude's scanner:
//	                JSON this conversion leaves to Python (integers over
//	                its digit limit, invalid UTF-8, deep nesting), so that
//	                Python reports it as it always has
//	(2, id, error)  a failure: a dict of name, tool, code, message, errors
const (
	tagValue = 0
	tagJSON  = 1
	tagError = 2
)

// CPython's marshal type codes (Python/marshal.c, version 4).
const (
	mNull        = '0'
	mNone        = 'N'
	mFalse       = 'F'
	mTrue        = 'T'
	mInt         = 'i'
	mLong        = 'l'
	mFloat       = 'g'
	mUnicode     = 'u'
	mBytes       = 's'
	mInterned    = 't'
	mShortASCII  = 'z'
	mShortASCIIK = 'Z' // interned
	mList        = '['
	mDict        = '{'
	mSmallTuple  = ')'
	mRef         = 'r'
	mFlagRef     = 0x80
)

const (
	// maxIntDigits is CPython's default limit on the decimal digits of an
	// int made from text (sys.int_info.default_max_str_digits): a longer
	// integer goes to Python as JSON, whose scanner refuses it.
	maxIntDigits = 4300
	// maxDepth is the deepest nesting converted here; deeper JSON goes to
	// the scanner, which raises RecursionError as Python does.
	maxDepth = 200
	// maxRefLen is the longest string shared by reference: keys and short
	// values repeat across the items of a list.
	maxRefLen = 64
)

// frameHead starts the frame of a completion: its length (filled in by
// frameEnd), the tuple, its tag and id.
func frameHead(b []byte, tag int, id int64) []byte {
	b = append(b, 0, 0, 0, 0, mSmallTuple, 3)
	b = appendPyInt(b, int64(tag))
	return appendPyInt(b, id)
}

// frameEnd fills in the length of the frame that starts at b[at:].
func frameEnd(b []byte, at int) []byte {
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// appendValueFrame appends the frame of a result, compact JSON text.
func appendValueFrame(dst []byte, id int64, text []byte) []byte {
	at := len(dst)
	var m marshaller
	b, rest, ok := m.value(frameHead(dst, tagValue, id), text, 0)
	if ok && len(rest) == 0 {
		return frameEnd(b, at)
	}
	b = frameHead(b[:at], tagJSON, id)
	b = binary.LittleEndian.AppendUint32(append(b, mBytes), uint32(len(text)))
	return frameEnd(append(b, text...), at)
}

// appendResultFrame appends the frame of a tool's result, JSON text as
// the tool returned it; ok is false when it is not JSON. Most results
// convert in one pass over the text as it is; the rest are compacted
// first and take appendValueFrame's way (which leaves some to Python's
// scanner), as every result once did.
func appendResultFrame(dst []byte, id int64, out []byte) (frame []byte, ok bool) {
	at := len(dst)
	var m marshaller
	b, rest, ok := m.value(frameHead(dst, tagValue, id), out, 0)
	if ok && len(skipSpace(rest)) == 0 {
		return frameEnd(b, at), true
	}
	var text bytes.Buffer
	text.Grow(len(out))
	if json.Compact(&text, out) != nil {
		return b[:at], false
	}
	return appendValueFrame(b[:at], id, text.Bytes()), true
}

// skipSpace returns src after the JSON whitespace it starts with.
func skipSpace(src []byte) []byte {
	for len(src) > 0 && (src[0] == ' ' || src[0] == '\n' || src[0] == '\r' || src[0] == '\t') {
		src = src[1:]
	}
	return src
}

// appendErrorFrame appends the frame of a failure, its fields as a JSON
// object.
func appendErrorFrame(dst []byte, id int64, x []byte) []byte {
	at := len(dst)
	var m marshaller
	b, rest, ok := m.value(frameHead(dst, tagError, id), x, 0)
	if !ok || len(rest) != 0 {
		// A message that is not UTF-8: the prelude reports it as a
		// failure with no details.
		b = append(frameHead(b[:at], tagError, id), mDict, mNull)
	}
	return frameEnd(b, at)
}

// appendPyInt appends an int.
func appendPyInt(b []byte, v int64) []byte {
	if v >= math.MinInt32 && v <= math.MaxInt32 {
		return binary.LittleEndian.AppendUint32(append(b, mInt), uint32(int32(v)))
	}
	return appendPyLong(b, big.NewInt(v))
}

// appendPyLong appends an int of any size: its sign and magnitude in
// 15-bit digits, least significant first.
func appendPyLong(b []byte, v *big.Int) []byte {
	mag := new(big.Int).Abs(v)
	var digits []uint16
	mask := big.NewInt(1<<15 - 1)
	d := new(big.Int)
	for mag.Sign() > 0 {
		digits = append(digits, uint16(d.And(mag, mask).Uint64()))
		mag.Rsh(mag, 15)
	}
	n := int32(len(digits))
	if v.Sign() < 0 {
		n = -n
	}
	b = binary.LittleEndian.AppendUint32(append(b, mLong), uint32(n))
	for _, x := range digits {
		b = binary.LittleEndian.AppendUint16(b, x)
	}
	return b
}

// appendPyStr appends a str of s, UTF-8 (surrogates allowed, as
// surrogatepass decodes them); interned for a dict's keys.
func appendPyStr(b, s []byte, intern bool) []byte {
	ascii := true
	for _, c := range s {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	switch {
	case ascii && len(s) < 256 && intern:
		b = append(b, mShortASCIIK, byte(len(s)))
	case ascii && len(s) < 256:
		b = append(b, mShortASCII, byte(len(s)))
	case intern:
		b = binary.LittleEndian.AppendUint32(append(b, mInterned), uint32(len(s)))
	default:
		b = binary.LittleEndian.AppendUint32(append(b, mUnicode), uint32(len(s)))
	}
	return append(b, s...)
}

// marshaller converts JSON to marshal data, sharing repeated short
// strings by reference. It accepts only valid JSON (what json.Valid
// accepts, and UTF-8), so that what it converts needs no other check; it
// refuses (ok false) what it leaves to Python's scanner too, and the
// caller then tells the two apart.
type marshaller struct {
	refs strTable
	// str is scratch space for a decoded string.
	str []byte
}

// strSeed seeds the hash of strTable.
var strSeed = maphash.MakeSeed()

// strTable maps the short strings a conversion wrote to their marshal
// reference numbers: open addressing over where each string's bytes are
// in the output, so that neither a lookup nor an insertion allocates a
// string (a map keyed by string took most of a conversion's time).
type strTable struct {
	slots []strSlot
	n     int
}

// strSlot is one string of a strTable: its hash, where its bytes are in
// the output (n bytes at off) and its reference number plus one (0: an
// empty slot).
type strSlot struct {
	hash, off, n, ref1 uint32
}

// find returns the reference number of s, whose hash is h, when out (the
// output so far) holds it.
func (t *strTable) find(out, s []byte, h uint32) (uint32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.ref1 == 0 {
			return 0, false
		}
		if sl.hash == h && int(sl.n) == len(s) && string(out[sl.off:sl.off+sl.n]) == string(s) {
			return sl.ref1 - 1, true
		}
	}
}

// add records that the string whose hash is h has its n bytes at out[off:],
// with the next reference number (the strings added before it).
func (t *strTable) add(h uint32, off, n int) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.n++
	t.put(strSlot{hash: h, off: uint32(off), n: uint32(n), ref1: uint32(t.n)})
}

func (t *strTable) put(sl strSlot) {
	mask := uint32(len(t.slots) - 1)
	i := sl.hash & mask
	for t.slots[i].ref1 != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = sl
}

// grow doubles the table (from 256 slots: a typical result's distinct
// short strings).
func (t *strTable) grow() {
	old := t.slots
	size := max(256, 2*len(old))
	t.slots = make([]strSlot, size)
	for _, sl := range old {
		if sl.ref1 != 0 {
			t.put(sl)
		}
	}
}

// value appends the JSON value at the start of src and returns the rest
// of src; ok is false for JSON left to Python's scanner.
func (m *marshaller) value(b, src []byte, depth int) (out, rest []byte, ok bool) {
	src = skipSpace(src)
	if len(src) == 0 || depth > maxDepth {
		return b, src, false
	}
	switch c := src[0]; {
	case c == 'n' && len(src) >= 4 && string(src[:4]) == "null":
		return append(b, mNone), src[4:], true
	case c == 't' && len(src) >= 4 && string(src[:4]) == "true":
		return append(b, mTrue), src[4:], true
	case c == 'f' && len(src) >= 5 && string(src[:5]) == "false":
		return append(b, mFalse), src[5:], true
	case c == '"':
		return m.string(b, src, false)
	case c == '[':
		return m.list(b, src[1:], depth)
	case c == '{':
		return m.dict(b, src[1:], depth)
	case c == '-' || (c >= '0' && c <= '9'):
		return number(b, src)
	}
	return b, src, false
}

func (m *marshaller) list(b, src []byte, depth int) ([]byte, []byte, bool) {
	at := len(b) + 1
	b = append(b, mList, 0, 0, 0, 0)
	n := uint32(0)
	if src = skipSpace(src); len(src) > 0 && src[0] == ']' {
		return b, src[1:], true
	}
	for {
		var ok bool
		if b, src, ok = m.value(b, src, depth+1); !ok {
			return b, src, false
		}
		if src = skipSpace(src); len(src) == 0 {
			return b, src, false
		}
		n++
		c := src[0]
		src = src[1:]
		if c == ']' {
			binary.LittleEndian.PutUint32(b[at:], n)
			return b, src, true
		}
		if c != ',' {
			return b, src, false
		}
	}
}

func (m *marshaller) dict(b, src []byte, depth int) ([]byte, []byte, bool) {
	b = append(b, mDict)
	if src = skipSpace(src); len(src) > 0 && src[0] == '}' {
		return append(b, mNull), src[1:], true
	}
	for {
		var ok bool
		if src = skipSpace(src); len(src) == 0 || src[0] != '"' {
			return b, src, false
		}
		if b, src, ok = m.string(b, src, true); !ok {
			return b, src, false
		}
		if src = skipSpace(src); len(src) == 0 || src[0] != ':' {
			return b, src, false
		}
		if b, src, ok = m.value(b, src[1:], depth+1); !ok {
			return b, src, false
		}
		if src = skipSpace(src); len(src) == 0 {
			return b, src, false
		}
		c := src[0]
		src = src[1:]
		if c == '}' {
			return append(b, mNull), src, true
		}
		if c != ',' {
			return b, src, false
		}
	}
}

// string appends the JSON string at the start of src: escapes decoded as
// Python's scanner decodes them (a surrogate pair is one character, a
// lone surrogate stays one). Raw text that is not UTF-8 is left to Python.
func (m *marshaller) string(b, src []byte, key bool) ([]byte, []byte, bool) {
	// Most strings have no escape: they are their text, used in place.
	j := 1
	for j < len(src) && !strStop[src[j]] {
		j++
	}
	if j < len(src) && src[j] == '"' {
		if !utf8.Valid(src[1:j]) {
			return b, src, false
		}
		return m.appendStr(b, src[1:j], key), src[j+1:], true
	}
	s := m.str[:0]
	i := 1
	for {
		if i >= len(src) {
			return b, src, false
		}
		c := src[i]
		if c == '"' {
			i++
			break
		}
		if c != '\\' {
			j := i
			for j < len(src) && src[j] != '"' && src[j] != '\\' {
				if src[j] < 0x20 {
					// A control character must be escaped.
					return b, src, false
				}
				j++
			}
			if !utf8.Valid(src[i:j]) {
				return b, src, false
			}
			s = append(s, src[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(src) {
			return b, src, false
		}
		e := src[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			s = append(s, e)
		case 'b':
			s = append(s, '\b')
		case 'f':
			s = append(s, '\f')
		case 'n':
			s = append(s, '\n')
		case 'r':
			s = append(s, '\r')
		case 't':
			s = append(s, '\t')
		case 'u':
			r, ok := hex4(src, i)
			if !ok {
				return b, src, false
			}
			i += 4
			if r >= 0xd800 && r < 0xdc00 && i+6 <= len(src) && src[i] == '\\' && src[i+1] == 'u' {
				if lo, ok := hex4(src, i+2); ok && lo >= 0xdc00 && lo < 0xe000 {
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					i += 6
				}
			}
			s = appendWTF8(s, r)
		default:
			return b, src, false
		}
	}
	m.str = s
	return m.appendStr(b, s, key), src[i:], true
}

// strStop marks the bytes that end a string's plain run: its closing
// quote, an escape, and the control characters JSON refuses in strings.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// appendStr appends the str s, by reference when the conversion wrote it
// already.
func (m *marshaller) appendStr(b, s []byte, key bool) []byte {
	if len(s) > maxRefLen {
		return appendPyStr(b, s, key)
	}
	h := uint32(maphash.Bytes(strSeed, s))
	if ref, ok := m.refs.find(b, s, h); ok {
		return binary.LittleEndian.AppendUint32(append(b, mRef), ref)
	}
	at := len(b)
	b = appendPyStr(b, s, key)
	b[at] |= mFlagRef
	m.refs.add(h, len(b)-len(s), len(s))
	return b
}

func hex4(src []byte, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(src[i:i+4]), 16, 32)
	return rune(v), err == nil
}

// numberEnd returns the length of the JSON number at the start of src
// (JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?) and
// whether it is an integer's text; ok is false when src does not start
// with one.
func numberEnd(src []byte) (n int, integral, ok bool) {
	digits := func(i int) int {
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && src[i] >= '1' && src[i] <= '9':
		i = digits(i + 1)
	default:
		return 0, false, false
	}
	integral = true
	if i < len(src) && src[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false, false
		}
		i, integral = j, false
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false, false
		}
		i, integral = j, false
	}
	return i, integral, true
}

// appendWTF8 appends r in UTF-8, a surrogate as its three bytes (what
// Python's surrogatepass decodes back to it).
func appendWTF8(s []byte, r rune) []byte {
	if r >= 0xd800 && r < 0xe000 {
		return append(s, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
	}
	return utf8.AppendRune(s, r)
}

// number appends the JSON number at the start of src: an int for an
// integer's text, else a float, as Python's scanner makes them.
func number(b, src []byte) ([]byte, []byte, bool) {
	i, integral, ok := numberEnd(src)
	if !ok {
		return b, src, false
	}
	if integral && i <= 18 {
		// Fewer than 19 digits: an int64, parsed here without a copy.
		v, neg := int64(0), src[0] == '-'
		for _, c := range src[:i] {
			if c != '-' {
				v = v*10 + int64(c-'0')
			}
		}
		if neg {
			v = -v
		}
		return appendPyInt(b, v), src[i:], true
	}
	text := string(src[:i])
	if integral {
		if v, err := strconv.ParseInt(text, 10, 64); err == nil {
			return appendPyInt(b, v), src[i:], true
		}
		if digits := strings.TrimPrefix(text, "-"); len(digits) > maxIntDigits {
			return b, src, false
		}
		v, ok := new(big.Int).SetString(text, 10)
		if !ok {
			return b, src, false
		}
		return appendPyLong(b, v), src[i:], true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(f, 0) {
		return b, src, false
	}
	return binary.LittleEndian.AppendUint64(append(b, mFloat), math.Float64bits(f)), src[i:], true
}
