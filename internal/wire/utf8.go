package wire

import (
	"strings"
	"unicode/utf8"
)

// Every string field of a protobuf message must be valid UTF-8: gRPC
// refuses to marshal one that is not, and the whole response is lost. The
// sources of text (WASM stdout, stderr, tool arguments) are checked where
// they enter ptc; the conversions below are the net under them, for every
// string a script, a tool or a client can put into a response.

// text returns s with each run of bytes that is not valid UTF-8 replaced
// by U+FFFD.
func text(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// jsonText returns the JSON text b as a string, valid UTF-8. A JSON text
// holds bytes outside ASCII only inside its strings, so the replacement
// keeps valid JSON valid.
func jsonText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
