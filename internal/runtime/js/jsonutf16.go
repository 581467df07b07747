package js

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/jsonval"
)

// JavaScript strings are UTF-16 and may hold unpaired surrogates; Go
// strings are UTF-8 and cannot. JSON.parse's text is handed to the
// decoder as WTF-8 when it holds one (an unpaired surrogate encoded as
// UTF-8 would encode the code point, three bytes from ED A0 80 to ED BF
// BF), and strings with unpaired surrogates are decoded into UTF-16 units.

// jsonText is the text of JSON.parse(s) as bytes for the decoder, and
// whether they are WTF-8 rather than UTF-8.
func jsonText(s goja.String) ([]byte, bool) {
	if g := s.String(); !inexact(g) {
		return []byte(g), false
	}
	n := s.Length()
	b := make([]byte, 0, n+n/2)
	for i := 0; i < n; i++ {
		c := rune(s.CharAt(i))
		if utf16.IsSurrogate(c) && i+1 < n {
			if r := utf16.DecodeRune(c, rune(s.CharAt(i+1))); r != utf8.RuneError {
				b = utf8.AppendRune(b, r)
				i++
				continue
			}
		}
		if utf16.IsSurrogate(c) {
			b = append(b, 0xe0|byte(c>>12), 0x80|byte(c>>6)&0x3f, 0x80|byte(c)&0x3f)
			continue
		}
		b = utf8.AppendRune(b, c)
	}
	return b, true
}

// readUTF16 decodes the JSON string whose opening quote is data[pos] into
// UTF-16 units, keeping unpaired surrogates (escaped, or in WTF-8 text
// encoded), and returns the offset just after the closing quote. Other
// invalid UTF-8 becomes U+FFFD.
func readUTF16(data []byte, pos int, wtf bool) ([]uint16, int, error) {
	syntax := func(i int, msg string) error { return fmt.Errorf("%w at offset %d: %s", jsonval.ErrSyntax, i, msg) }
	var u []uint16
	i := pos + 1
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			return u, i + 1, nil
		case c < 0x20:
			return nil, i, syntax(i, "control character in string")
		case c < utf8.RuneSelf && c != '\\':
			u = append(u, uint16(c))
			i++
			continue
		case c >= utf8.RuneSelf:
			if wtf && c == 0xed && i+2 < len(data) && data[i+1]&0xe0 == 0xa0 && data[i+2]&0xc0 == 0x80 {
				u = append(u, 0xd000|uint16(data[i+1]&0x3f)<<6|uint16(data[i+2]&0x3f))
				i += 3
				continue
			}
			r, size := utf8.DecodeRune(data[i:])
			u = utf16.AppendRune(u, r)
			i += size
			continue
		}
		i++ // the backslash
		if i >= len(data) {
			break
		}
		e := data[i]
		i++
		if b, ok := jsonval.Unescape(e); ok {
			u = append(u, uint16(b))
			continue
		}
		switch e {
		case 'u':
			r, ok := jsonval.Hex4(data, i)
			if !ok {
				return nil, i, syntax(i, "invalid \\u escape")
			}
			i += 4
			// UTF-16 needs no pairing: a surrogate pair of escapes is two
			// units either way, and an unpaired one stays what it is.
			u = append(u, uint16(r))
		default:
			return nil, i, syntax(i, "invalid escape")
		}
	}
	return nil, i, syntax(i, "unterminated string")
}
