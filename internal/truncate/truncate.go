// Package truncate cuts a JSON value structurally until it fits a byte
// budget (and, optionally, a token budget), keeping it valid JSON: the
// overflow policy "truncate" of an execution's result.
//
// What is cut, and how it is marked:
//
//   - an array keeps its first items whole and ends with the string
//     "[truncated: N more items]" (when not even its first item fits whole,
//     the first item is itself truncated);
//   - an object keeps its keys and shares the budget between its values,
//     small values whole and large ones cut to an equal share; when not even
//     that fits it keeps its first keys and ends with the key "[truncated]"
//     whose value is "N more keys";
//   - a string keeps its beginning and ends with "…[truncated: N more
//     bytes]" (N counts bytes of the JSON string as written, escapes
//     included);
//   - numbers, booleans and null are never cut.
//
// Package truncate imports only the standard library.
package truncate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// MaxDepth bounds the nesting Fit handles.
const MaxDepth = 10000

// MaxValues bounds the values (numbers, strings, literals, arrays and
// objects, at any depth) of a value Fit cuts: cutting builds a tree of the
// whole value, 100 to 170 bytes a value (TestFitMemoryBound), and the cap
// keeps that under about 90 MiB. A value over the budget with more values is a
// *TooManyValuesError, found by a pass that allocates nothing.
const MaxValues = 1 << 19

// TooManyValuesError is returned for a value over the budget that has more
// than Max values, too many to cut.
type TooManyValuesError struct {
	// Max is the number of values Fit cuts at most (MaxValues).
	Max int
}

func (e *TooManyValuesError) Error() string {
	return fmt.Sprintf("it has more than %d JSON values, more than truncation handles", e.Max)
}

// Report says what Fit did.
type Report struct {
	// Truncated is set when the value was cut.
	Truncated bool
	// DroppedItems counts the array items and object keys removed.
	DroppedItems int64
	// CutStrings counts the strings shortened.
	CutStrings int64
}

// TooLargeError is returned when even the smallest truncated form of the
// value is over a budget.
type TooLargeError struct {
	// SmallestBytes is the size of the smallest form truncation can make.
	SmallestBytes int
	// SmallestTokens is its token count, when a token budget was given.
	SmallestTokens int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("its smallest truncated form is %d bytes", e.SmallestBytes)
}

// ErrInvalid is returned for input that is not one valid JSON value.
var ErrInvalid = errors.New("truncate: invalid JSON")

// Fit returns v — one JSON value — unchanged when it fits maxBytes and
// maxTokens (a budget of 0 or less is none), else cut as the package
// describes until it fits both. tokens counts the tokens of a text; it is
// needed only with maxTokens and must be subadditive (the count of a
// concatenation is at most the sum of the counts) and at most the length in
// bytes, as prompt.ApproxTokens is. A value whose smallest form does not
// fit is a *TooLargeError; a value to cut with more than MaxValues values,
// a *TooManyValuesError.
func Fit(v []byte, maxBytes, maxTokens int, tokens func(string) int) ([]byte, Report, error) {
	if maxTokens > 0 && tokens == nil {
		return nil, Report{}, errors.New("truncate: a token budget needs a token counter")
	}
	fitsTokens := func(b []byte) bool { return maxTokens <= 0 || len(b) <= maxTokens || tokens(string(b)) <= maxTokens }
	if (maxBytes <= 0 || len(v) <= maxBytes) && fitsTokens(v) {
		return v, Report{}, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(v))
	if err := json.Compact(&buf, v); err != nil {
		return nil, Report{}, ErrInvalid
	}
	compact := buf.Bytes()
	root, err := parse(compact)
	if err != nil {
		return nil, Report{}, err
	}
	budget := len(compact)
	if maxBytes > 0 && maxBytes < budget {
		budget = maxBytes
	}
	if min := root.min(); min > budget {
		return nil, Report{}, &TooLargeError{SmallestBytes: min, SmallestTokens: countTokens(tokens, maxTokens, root.smallest())}
	}
	out, rep := emitRoot(root, budget)
	if fitsTokens(out) {
		return out, rep, nil
	}
	// A text has at most as many tokens as bytes, so a byte budget of
	// maxTokens fits the token budget; find the largest byte budget between
	// it and the byte budget that still does.
	lo := maxTokens
	if min := root.min(); min > lo {
		small := root.smallest()
		if n := tokens(string(small)); n > maxTokens {
			return nil, Report{}, &TooLargeError{SmallestBytes: len(small), SmallestTokens: n}
		}
		lo = min
	}
	best, bestRep := emitRoot(root, lo)
	hi := budget - 1
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		o, r := emitRoot(root, mid)
		if fitsTokens(o) {
			lo, best, bestRep = mid, o, r
		} else {
			hi = mid - 1
		}
	}
	return best, bestRep, nil
}

func countTokens(tokens func(string) int, maxTokens int, b []byte) int {
	if maxTokens <= 0 || tokens == nil {
		return 0
	}
	return tokens(string(b))
}

// emitRoot writes root within budget (at least root.min()).
func emitRoot(root *node, budget int) ([]byte, Report) {
	e := &emitter{}
	e.buf.Grow(budget)
	e.emit(root, budget)
	e.rep.Truncated = e.rep.DroppedItems > 0 || e.rep.CutStrings > 0
	return e.buf.Bytes(), e.rep
}

// Kinds of node.
const (
	kindAtom = iota // number, true, false, null
	kindString
	kindArray
	kindObject
)

// node is one value of the parsed input: its compact text and, for
// containers, its children (and an object's keys, as written).
type node struct {
	kind int
	raw  []byte
	keys [][]byte
	kids []*node
	// minSize caches min().
	minSize int
}

// Markers. Their texts are part of the contract (see ptc.v1.OverflowPolicy).
func itemsMarker(n int) string  { return `"[truncated: ` + strconv.Itoa(n) + ` more items]"` }
func keysMarker(n int) string   { return `"[truncated]":"` + strconv.Itoa(n) + ` more keys"` }
func stringMarker(n int) string { return `…[truncated: ` + strconv.Itoa(n) + ` more bytes]` }
func stringMarkerLen(n int) int { return len(stringMarker(n)) }

// min is the size of the node's smallest form.
func (n *node) min() int {
	if n.minSize > 0 {
		return n.minSize
	}
	m := len(n.raw)
	switch n.kind {
	case kindString:
		m = min(m, 2+stringMarkerLen(len(n.raw)-2))
	case kindArray:
		if len(n.kids) > 0 {
			m = min(m, 2+len(itemsMarker(len(n.kids))))
		}
	case kindObject:
		if len(n.kids) > 0 {
			m = min(m, 2+len(keysMarker(len(n.kids))))
		}
	}
	n.minSize = m
	return m
}

// smallest returns the node's smallest form.
func (n *node) smallest() []byte {
	out, _ := emitRoot(n, n.min())
	return out
}

type emitter struct {
	buf bytes.Buffer
	rep Report
}

// emit writes n in at most budget bytes; budget is at least n.min().
func (e *emitter) emit(n *node, budget int) {
	if len(n.raw) <= budget {
		e.buf.Write(n.raw)
		return
	}
	switch n.kind {
	case kindString:
		e.str(n, budget)
	case kindArray:
		e.array(n, budget)
	case kindObject:
		e.object(n, budget)
	default:
		e.buf.Write(n.raw) // unreachable: an atom's min is its size
	}
}

// str writes the longest prefix of the string that fits with its marker.
func (e *emitter) str(n *node, budget int) {
	body := n.raw[1 : len(n.raw)-1]
	cut := 0
	for i := 0; i < len(body); {
		j := nextToken(body, i)
		if 2+j+stringMarkerLen(len(body)-j) > budget {
			break
		}
		cut, i = j, j
	}
	e.rep.CutStrings++
	e.buf.WriteByte('"')
	e.buf.Write(body[:cut])
	e.buf.WriteString(stringMarker(len(body) - cut))
	e.buf.WriteByte('"')
}

// nextToken returns the end of the string token at body[i]: an escape
// (a surrogate pair counts as one) or one UTF-8 sequence.
func nextToken(body []byte, i int) int {
	c := body[i]
	if c == '\\' {
		if i+1 < len(body) && body[i+1] == 'u' {
			j := i + 6
			if isHighSurrogate(body[i+2:j]) && j+6 <= len(body) && body[j] == '\\' && body[j+1] == 'u' && isLowSurrogate(body[j+2:j+6]) {
				return j + 6
			}
			return j
		}
		return i + 2
	}
	if c < 0x80 {
		return i + 1
	}
	j := i + 1
	for j < len(body) && body[j]&0xC0 == 0x80 {
		j++
	}
	return j
}

func hexPrefix(h []byte) (byte, bool) {
	if len(h) != 4 || (h[0] != 'd' && h[0] != 'D') {
		return 0, false
	}
	c := h[1]
	if c >= 'A' && c <= 'F' {
		c += 'a' - 'A'
	}
	return c, true
}

func isHighSurrogate(h []byte) bool {
	c, ok := hexPrefix(h)
	return ok && c >= '8' && c <= '9' || ok && (c == 'a' || c == 'b')
}

func isLowSurrogate(h []byte) bool {
	c, ok := hexPrefix(h)
	return ok && c >= 'c' && c <= 'f'
}

// array keeps the first items that fit whole, then a marker; when none
// fits whole, the first item cut to what is left.
func (e *emitter) array(n *node, budget int) {
	total := len(n.kids)
	marker := len(itemsMarker(total)) // an upper bound of every marker's size
	e.buf.WriteByte('[')
	used := 2 // the brackets
	kept := 0
	for kept < total {
		k := n.kids[kept]
		sep := 0
		if kept > 0 {
			sep = 1
		}
		rest := 0
		if kept+1 < total {
			rest = 1 + len(itemsMarker(total-kept-1)) // ",marker" for the items after this one
		}
		if used+sep+len(k.raw)+rest > budget {
			break
		}
		if sep > 0 {
			e.buf.WriteByte(',')
		}
		e.buf.Write(k.raw)
		used += sep + len(k.raw)
		kept++
	}
	if kept == 0 {
		// Not one item fits whole: cut the first, if it (and the marker of
		// the others) fit.
		room := budget - used
		if total > 1 {
			room -= 1 + marker
		}
		if first := n.kids[0]; room >= first.min() {
			e.emit(first, room)
			kept = 1
		}
	}
	if dropped := total - kept; dropped > 0 {
		if kept > 0 {
			e.buf.WriteByte(',')
		}
		e.buf.WriteString(itemsMarker(dropped))
		e.rep.DroppedItems += int64(dropped)
	}
	e.buf.WriteByte(']')
}

// object shares the budget between its values (small ones whole, large ones
// an equal share), dropping its last keys when even their smallest forms do
// not fit.
func (e *emitter) object(n *node, budget int) {
	total := len(n.kids)
	marker := len(keysMarker(total))
	// keep is the most keys (a prefix) whose keys and smallest values fit,
	// with the marker when keys are dropped.
	keep := 0
	fixed := 2 // braces, separators, keys and colons of the kept entries
	minSum := 0
	for i := 0; i < total; i++ {
		entry := len(n.keys[i]) + 1
		if i > 0 {
			entry++
		}
		rest := 0
		if i+1 < total {
			rest = 1 + marker
		}
		if fixed+entry+minSum+n.kids[i].min()+rest > budget {
			break
		}
		fixed += entry
		minSum += n.kids[i].min()
		keep++
	}
	dropped := total - keep
	avail := budget - fixed
	if dropped > 0 {
		avail -= marker
		if keep > 0 {
			avail--
		}
	}
	shares := waterFill(n.kids[:keep], avail)
	e.buf.WriteByte('{')
	for i := 0; i < keep; i++ {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		e.buf.Write(n.keys[i])
		e.buf.WriteByte(':')
		e.emit(n.kids[i], shares[i])
	}
	if dropped > 0 {
		if keep > 0 {
			e.buf.WriteByte(',')
		}
		e.buf.WriteString(keysMarker(dropped))
		e.rep.DroppedItems += int64(dropped)
	}
	e.buf.WriteByte('}')
}

// waterFill gives each node max(min, min(size, t)) bytes for the largest
// level t whose shares sum to at most avail (which covers every min).
func waterFill(kids []*node, avail int) []int {
	shares := make([]int, len(kids))
	share := func(k *node, t int) int { return max(k.min(), min(len(k.raw), t)) }
	sum := func(t int) int {
		s := 0
		for _, k := range kids {
			s += share(k, t)
		}
		return s
	}
	lo, hi := 0, 0
	for _, k := range kids {
		hi = max(hi, len(k.raw))
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if sum(mid) <= avail {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for i, k := range kids {
		shares[i] = share(k, lo)
	}
	return shares
}
