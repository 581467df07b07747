package wire

import (
	"crypto/sha256"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/core"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// deterministic marshals the same message to the same bytes every time.
var deterministic = proto.MarshalOptions{Deterministic: true}

// AnswersDigest is the SHA-256 of a Resume's answers in their canonical
// encoding (the deterministic protobuf encoding of the answers, in the
// order given): what tells a retried Resume from one with other answers.
func AnswersDigest(answers []core.Answer) [sha256.Size]byte {
	b, _ := deterministic.Marshal(ResumePB("", answers, nil))
	return sha256.Sum256(b)
}

// MarshalOutcome encodes the outcome of a resume (the ExecuteResponse a
// Resume returns) to keep it for a retry.
func MarshalOutcome(r *core.Result) ([]byte, error) {
	return deterministic.Marshal(ResultPB(r))
}

// UnmarshalOutcome decodes an outcome kept by MarshalOutcome.
func UnmarshalOutcome(b []byte) (*core.Result, error) {
	var m ptcv1.ExecuteResponse
	if err := proto.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("outcome: %w", err)
	}
	return ResultFromPB(&m), nil
}
