package python

import "bytes"

// integralFloats rewrites the JSON numbers Python writes for integral
// floats ("3000.0", "-2.0") as JavaScript writes them ("3000", "-2"), so
// that a Python script's results and arguments are the JSON a JavaScript
// script's would be: JSON does not tell 3000.0 from 3000, but a reader
// comparing text, or a schema checker strict about integers, would. Other
// numbers, and everything inside strings, are left alone. b is valid JSON.
func integralFloats(b []byte) []byte {
	if !bytes.Contains(b, []byte(".0")) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			out = append(out, b[i:min(j+1, len(b))]...)
			i = j + 1
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
				j++
			}
			num := b[i:j]
			if k := bytes.IndexByte(num, '.'); k > 0 && bytes.IndexAny(num, "eE") < 0 && allZeros(num[k+1:]) {
				num = num[:k]
				if bytes.Equal(num, []byte("-0")) {
					num = []byte("0")
				}
			}
			out = append(out, num...)
			i = j
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

func allZeros(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c != '0' {
			return false
		}
	}
	return true
}
