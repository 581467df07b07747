package python

import (
	"bytes"
	"testing"
)

func TestStripDebug(t *testing.T) {
	hdr := []byte("\x00asm\x01\x00\x00\x00")
	custom := func(name, body string) []byte {
		c := append([]byte{byte(len(name))}, name...)
		c = append(c, body...)
		return append([]byte{0, byte(len(c))}, c...)
	}
	typ := []byte{1, 4, 1, 0x60, 0, 0}
	cases := []struct {
		name     string
		in, want []byte
		err      bool
	}{
		{name: "debug sections go", in: concat(hdr, custom(".debug_info", "xx"), typ, custom(".debug_line", "y")), want: concat(hdr, typ)},
		{name: "other custom sections stay", in: concat(hdr, custom("name", "n"), typ), want: concat(hdr, custom("name", "n"), typ)},
		{name: "not a module", in: []byte("hello world"), err: true},
		{name: "section past the end", in: concat(hdr, []byte{1, 9, 0}), err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := stripDebug(c.in)
			if c.err {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil || !bytes.Equal(got, c.want) {
				t.Fatalf("stripDebug = %x, %v; want %x", got, err, c.want)
			}
		})
	}
}

func concat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}
