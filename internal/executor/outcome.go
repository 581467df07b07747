package executor

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"

	"github.com/ptcrun/ptc/internal/core"
)

// OutcomeCodec encodes the outcome of a resume so that it can be kept for
// a retry (see StartResume): internal/wire's Outcomes encodes it as the
// Resume response, so that a retry gets the identical response. The
// executor itself knows no wire.
type OutcomeCodec interface {
	MarshalOutcome(*core.Result) ([]byte, error)
	UnmarshalOutcome([]byte) (*core.Result, error)
}

// answersDigest is the SHA-256 of a canonical encoding of a resume's
// answers, in call id order (the order they were sent in does not matter):
// for each answer its call id, its kind and its fields, every string
// length-prefixed, so that no two different sets of answers encode alike.
func answersDigest(answers []core.Answer) [sha256.Size]byte {
	sorted := slices.Clone(answers)
	slices.SortStableFunc(sorted, func(a, b core.Answer) int { return strings.Compare(a.CallID, b.CallID) })
	var b []byte
	field := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(sorted)))
	for _, a := range sorted {
		field(a.CallID)
		switch {
		case a.Approve || a.Deny:
			kind := "deny"
			if a.Approve {
				kind = "approve"
			}
			field(kind)
			field(a.Reason)
		case a.Error != nil:
			field("error")
			field(a.Error.Code)
			field(a.Error.Message)
		default:
			// The same JSON sent with other whitespace is the same answer.
			out := a.Output
			var compact bytes.Buffer
			if json.Compact(&compact, out) == nil {
				out = compact.Bytes()
			}
			field("output")
			field(string(out))
		}
	}
	return sha256.Sum256(b)
}
