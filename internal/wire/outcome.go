package wire

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/core"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// Outcomes encodes the outcome of a resume as the ExecuteResponse a
// Resume returns (deterministic protobuf), for the executor to keep it for
// a retry (executor.Config.Outcomes): a retry answered from it gets the
// identical response.
var Outcomes outcomeCodec

type outcomeCodec struct{}

// MarshalOutcome encodes a resume's outcome.
func (outcomeCodec) MarshalOutcome(r *core.Result) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(ResultPB(r))
}

// UnmarshalOutcome decodes an outcome MarshalOutcome encoded.
func (outcomeCodec) UnmarshalOutcome(b []byte) (*core.Result, error) {
	var m ptcv1.ExecuteResponse
	if err := proto.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("outcome: %w", err)
	}
	return ResultFromPB(&m), nil
}
