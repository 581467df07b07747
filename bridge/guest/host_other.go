//go:build !wasip1

package ptc

import (
	"encoding/json"

	"github.com/ptcrun/ptc/internal/abi"
)

// unsupportedHost answers every call with ErrUnsupported as a tool error.
type unsupportedHost struct{}

func hostABI() host { return unsupportedHost{} }

func (unsupportedHost) call(name string, _ []byte) (int32, []byte) {
	b, _ := json.Marshal(&Error{Name: abi.NameToolError, Tool: name, Code: "unsupported", Message: ErrUnsupported.Error()})
	return abi.StatusError, b
}

func (unsupportedHost) callBatch([]byte) (int32, []byte) {
	b, _ := json.Marshal(&Error{Name: abi.NameToolError, Code: "unsupported", Message: ErrUnsupported.Error()})
	return abi.StatusError, b
}
