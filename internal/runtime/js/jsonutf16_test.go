package js

import (
	"slices"
	"testing"

	"github.com/dop251/goja"
)

// unitsOf reads data as UTF-16 code units, two bytes each.
func unitsOf(data []byte) []uint16 {
	u := make([]uint16, len(data)/2)
	for i := range u {
		u[i] = uint16(data[2*i])<<8 | uint16(data[2*i+1])
	}
	return u
}

// checkUnits: any string of UTF-16 units, paired surrogates or not, comes
// back unit for unit from JSON.stringify's quoting and the decoder, and
// from JSON.parse's WTF-8 text.
func checkUnits(t *testing.T, u []uint16) {
	t.Helper()
	s := goja.StringFromUTF16(u)
	st := &jsonState{max: 1 << 30}
	st.quote(s)
	got, end, err := readUTF16(st.b, 0, false)
	if err != nil || end != len(st.b) || !slices.Equal(got, u) {
		t.Fatalf("%x: quoted as %q, read back %x (end %d of %d, %v)", u, st.b, got, end, len(st.b), err)
	}
	for _, c := range u {
		if c == '"' || c == '\\' || c < 0x20 {
			return // not a JSON string's text as it stands
		}
	}
	text, wtf := jsonText(s)
	got, _, err = readUTF16(append(append([]byte{'"'}, text...), '"'), 0, wtf)
	if err != nil || !slices.Equal(got, u) {
		t.Fatalf("%x: as text %q (wtf %v), read back %x (%v)", u, text, wtf, got, err)
	}
}

func TestUTF16RoundTrip(t *testing.T) {
	for _, u := range [][]uint16{
		{}, {'a'}, {0xd800}, {0xdc00}, {0xdbff, 'x'}, {'x', 0xdfff}, {0xd83d, 0xde00}, {0xde00, 0xd83d},
		{0xd800, 0xd800, 0xdc00}, {0xfffd, 0xd800}, {'"', '\\', 0x00, 0x1f, 0x7f}, {0x2028, 0x2029, 0xe9},
	} {
		checkUnits(t, u)
	}
}

func FuzzUTF16RoundTrip(f *testing.F) {
	for _, s := range []string{"", "\xd8\x00", "\xd8\x3d\xde\x00", "\x00\x41\xdc\x00", "\x00\x22\x00\x5c"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		checkUnits(t, unitsOf(data))
	})
}
