package server

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestCountEntriesInAll: entries are counted at every depth, each field
// against maxRepeatedEntries and all of them against maxRequestEntries,
// packed scalars by their values.
func TestCountEntriesInAll(t *testing.T) {
	list := func(n int) *structpb.Value {
		vs := make([]*structpb.Value, n)
		for i := range vs {
			vs[i] = structpb.NewNullValue()
		}
		return structpb.NewListValue(&structpb.ListValue{Values: vs})
	}
	count := func(lists, each int) error {
		outer := &structpb.ListValue{}
		for range lists {
			outer.Values = append(outer.Values, list(each))
		}
		b, err := proto.Marshal(outer)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		return countEntries(b, outer.ProtoReflect().Descriptor(), 0, &total)
	}
	if err := count(9, maxRepeatedEntries); err != nil {
		t.Fatalf("90,009 entries refused: %v", err)
	}
	if err := count(1, maxRepeatedEntries+1); err == nil || !strings.Contains(err.Error(), "google.protobuf.ListValue.values has more than 10000") {
		t.Fatalf("one field past its bound: %v", err)
	}
	if err := count(11, maxRepeatedEntries); err == nil || !strings.Contains(err.Error(), "more than 100000 entries in all") {
		t.Fatalf("110,011 entries in all: %v", err)
	}
	if n := packedEntries([]byte{1, 0x80, 0x01, 2}, protoreflect.Int32Kind); n != 3 {
		t.Fatalf("packed varints: %d", n)
	}
}
