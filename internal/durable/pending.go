package durable

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/ptcrun/ptc/internal/core"
)

// maxPendingBytes bounds the pending calls a continuation carries; a paused
// state whose pending calls take more is sealed without them (its answers
// are then checked against the state).
const maxPendingBytes = 16 << 10

// PendingCall is a call a paused execution waits for, as its continuation
// records it: enough to check a Resume's answers without the state, all
// but a client tool's output against the tool's output schema.
type PendingCall struct {
	// Seq is the call's number (its call id is core.CallID(Seq)).
	Seq  int32
	Kind core.ActionKind
	Tool string
	// PlainOutput reports that the call is to a client tool of the
	// execution without an output schema: any JSON value answers it.
	PlainOutput bool
}

// encodePending encodes the calls st waits for:
//
//	tools  uvarint count, then each: uvarint length + name, 1 byte (1: plain output)
//	calls  uvarint count, then each: uvarint seq, 1 byte kind, uvarint tool index
//
// nil when the encoding is longer than maxPendingBytes.
func encodePending(st *State) []byte {
	plain := map[string]bool{}
	for _, d := range st.ClientTools {
		plain[d.Name] = len(d.OutputSchema) == 0
	}
	index := map[string]int{}
	var names []string
	for _, a := range st.Journal.Pending {
		if _, ok := index[a.Tool]; !ok {
			index[a.Tool] = len(names)
			names = append(names, a.Tool)
		}
	}
	b := binary.AppendUvarint(nil, uint64(len(names)))
	for _, n := range names {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
		flags := byte(0)
		if plain[n] {
			flags = 1
		}
		b = append(b, flags)
	}
	b = binary.AppendUvarint(b, uint64(len(st.Journal.Pending)))
	for _, a := range st.Journal.Pending {
		b = binary.AppendUvarint(b, uint64(a.Seq))
		b = append(b, byte(a.Kind))
		b = binary.AppendUvarint(b, uint64(index[a.Tool]))
		if len(b) > maxPendingBytes {
			return nil
		}
	}
	if len(b) > maxPendingBytes {
		return nil
	}
	return b
}

var errPending = errors.New("malformed pending calls")

// decodePending reverses encodePending. The bytes are signed, but are
// checked all the same.
func decodePending(b []byte) ([]PendingCall, error) {
	uvarint := func(max uint64) (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > max {
			return 0, errPending
		}
		b = b[n:]
		return v, nil
	}
	nt, err := uvarint(uint64(len(b)))
	if err != nil {
		return nil, err
	}
	type tool struct {
		name  string
		plain bool
	}
	tools := make([]tool, nt)
	for i := range tools {
		l, err := uvarint(uint64(len(b)))
		if err != nil || len(b) < int(l)+1 || b[l] > 1 {
			return nil, errPending
		}
		tools[i] = tool{name: string(b[:l]), plain: b[l] == 1}
		b = b[l+1:]
	}
	nc, err := uvarint(uint64(len(b)))
	if err != nil {
		return nil, err
	}
	calls := make([]PendingCall, nc)
	for i := range calls {
		seq, err := uvarint(math.MaxInt32)
		if err != nil || len(b) < 1 {
			return nil, errPending
		}
		k := core.ActionKind(b[0])
		if k != core.ActionClientTool && k != core.ActionApproval {
			return nil, errPending
		}
		b = b[1:]
		ti, err := uvarint(nt - 1)
		if err != nil || nt == 0 {
			return nil, errPending
		}
		t := tools[ti]
		calls[i] = PendingCall{Seq: int32(seq), Kind: k, Tool: t.name, PlainOutput: t.plain && k == core.ActionClientTool}
	}
	if len(b) != 0 {
		return nil, errPending
	}
	return calls, nil
}
