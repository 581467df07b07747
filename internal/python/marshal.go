package python

import (
	"encoding/binary"
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

// marshaller converts compact JSON (as json.Compact writes it) to marshal
// data, sharing repeated short strings by reference.
type marshaller struct {
	refs map[string]uint32
	// str is scratch space for a decoded string.
	str []byte
}

// value appends the JSON value at the start of src and returns the rest
// of src; ok is false for JSON left to Python's scanner.
func (m *marshaller) value(b, src []byte, depth int) (out, rest []byte, ok bool) {
	if len(src) == 0 || depth > maxDepth {
		return b, src, false
	}
	switch c := src[0]; {
	case c == 'n' && len(src) >= 4:
		return append(b, mNone), src[4:], true
	case c == 't' && len(src) >= 4:
		return append(b, mTrue), src[4:], true
	case c == 'f' && len(src) >= 5:
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
	if len(src) > 0 && src[0] == ']' {
		return b, src[1:], true
	}
	for {
		var ok bool
		if b, src, ok = m.value(b, src, depth+1); !ok || len(src) == 0 {
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
	if len(src) > 0 && src[0] == '}' {
		return append(b, mNull), src[1:], true
	}
	for {
		var ok bool
		if len(src) == 0 || src[0] != '"' {
			return b, src, false
		}
		if b, src, ok = m.string(b, src, true); !ok || len(src) == 0 || src[0] != ':' {
			return b, src, false
		}
		if b, src, ok = m.value(b, src[1:], depth+1); !ok || len(src) == 0 {
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
	if len(s) > maxRefLen {
		return appendPyStr(b, s, key), src[i:], true
	}
	if m.refs == nil {
		m.refs = make(map[string]uint32)
	}
	if ref, ok := m.refs[string(s)]; ok {
		return binary.LittleEndian.AppendUint32(append(b, mRef), ref), src[i:], true
	}
	m.refs[string(s)] = uint32(len(m.refs))
	at := len(b)
	b = appendPyStr(b, s, key)
	b[at] |= mFlagRef
	return b, src[i:], true
}

func hex4(src []byte, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(src[i:i+4]), 16, 32)
	return rune(v), err == nil
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
	i, integral := 0, true
	for i < len(src) {
		c := src[i]
		if c == '.' || c == 'e' || c == 'E' {
			integral = false
		} else if !(c == '-' || c == '+' || (c >= '0' && c <= '9')) {
			break
		}
		i++
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
