package python

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// stripDebug returns the module without its DWARF custom sections
// (".debug_info", ".debug_line", …): 13 MB of the interpreter's 26 MB.
// wazero reads them to name source lines in the stack trace of a guest
// that exits or traps — CPython exits through proc_exit, and a timeout
// or limit ends it with a trap — which cost each such execution about 7 s
// of CPU parsing DWARF. The interpreter's own stack is no one's business
// here: the prelude reports the script's. The module's digest is checked
// on the bytes as shipped, before stripping.
func stripDebug(bin []byte) ([]byte, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:4], []byte("\x00asm")) {
		return nil, errors.New("not a WebAssembly module")
	}
	out := make([]byte, 0, len(bin))
	out = append(out, bin[:8]...)
	for p := 8; p < len(bin); {
		start := p
		id := bin[p]
		size, n := binary.Uvarint(bin[p+1:])
		if n <= 0 || size > uint64(len(bin)-(p+1+n)) {
			return nil, errors.New("a section's size runs past the end of the module")
		}
		body := bin[p+1+n : p+1+n+int(size)]
		p += 1 + n + int(size)
		if id == 0 {
			nameLen, m := binary.Uvarint(body)
			if m > 0 && nameLen <= uint64(len(body)-m) && bytes.HasPrefix(body[m:m+int(nameLen)], []byte(".debug")) {
				continue
			}
		}
		out = append(out, bin[start:p]...)
	}
	return out, nil
}
