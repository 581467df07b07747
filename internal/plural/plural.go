// Package plural writes counts with their noun in the right number:
// "1 tool call", "2 tool calls", "0 tool calls". Commands use it for every
// count they print. It imports nothing of ptc.
package plural

import "strconv"

// Integer is the count types the commands print.
type Integer interface {
	~int | ~int32 | ~int64 | ~uint32 | ~uint64
}

// Count returns n followed by one when n is 1 and by many otherwise:
// Count(1, "tool call", "tool calls") is "1 tool call".
func Count[T Integer](n T, one, many string) string {
	word := many
	if n == 1 {
		word = one
	}
	return strconv.FormatInt(int64(n), 10) + " " + word
}
