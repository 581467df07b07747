package server

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A request's repeated fields are counted on the wire before it is
// decoded: an empty entry of a repeated message field costs two bytes
// there, so a 24 MB request could carry twelve million of them, and
// decoding them took ptcd 5–30 s of CPU and up to 4 GB before any handler
// could refuse the count. The contract's own bounds are far lower (1,024
// client tools, 4,096 answers).
const (
	// maxRepeatedEntries bounds the entries of one repeated or map field
	// of one message.
	maxRepeatedEntries = 10_000
	// maxRequestEntries bounds the entries of all repeated and map fields
	// of a request, at any depth.
	maxRequestEntries = 100_000
	// maxCountDepth bounds how deep the count looks into nested messages
	// (the contract nests a few levels; protobuf's own decoder bounds
	// recursion).
	maxCountDepth = 32
)

// tooManyPrefix starts the text a message refused for its counts is
// marked with (requestCodec), which malformed then answers as it is.
const tooManyPrefix = "too many entries: "

// countEntries checks the repeated and map fields of the wire message b
// of type md, and of the messages it holds, against maxRepeatedEntries and
// maxRequestEntries; total counts the entries seen so far. Wire data that
// does not parse is left to the decoder, which refuses it.
func countEntries(b []byte, md protoreflect.MessageDescriptor, depth int, total *int) error {
	var counts map[protowire.Number]int
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		var value []byte
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil
			}
			value, b = v, b[n:]
		} else {
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil
			}
			b = b[n:]
		}
		fd := md.Fields().ByNumber(num)
		if fd == nil {
			continue
		}
		if fd.IsList() || fd.IsMap() {
			entries := 1
			if typ == protowire.BytesType && fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind &&
				fd.Kind() != protoreflect.StringKind && fd.Kind() != protoreflect.BytesKind {
				entries = packedEntries(value, fd.Kind())
			}
			if counts == nil {
				counts = map[protowire.Number]int{}
			}
			counts[num] += entries
			*total += entries
			if counts[num] > maxRepeatedEntries {
				return fmt.Errorf("%sfield %s has more than %d entries", tooManyPrefix, fd.FullName(), maxRepeatedEntries)
			}
			if *total > maxRequestEntries {
				return fmt.Errorf("%sthe request's repeated fields have more than %d entries in all", tooManyPrefix, maxRequestEntries)
			}
		}
		if typ == protowire.BytesType && fd.Message() != nil && depth < maxCountDepth {
			if err := countEntries(value, fd.Message(), depth+1, total); err != nil {
				return err
			}
		}
	}
	return nil
}

// packedEntries is the number of values of kind in a packed field's bytes.
func packedEntries(b []byte, kind protoreflect.Kind) int {
	switch kind {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return len(b) / 4
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return len(b) / 8
	}
	n := 0
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	return n
}
