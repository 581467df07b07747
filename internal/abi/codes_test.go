package abi_test

import (
	"testing"

	"github.com/ptcrun/ptc/internal/abi"
	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/tools"
)

// TestSharedNames: the names and codes the ABI repeats for its
// standard-library-only guest side equal their homes.
func TestSharedNames(t *testing.T) {
	for _, tc := range []struct{ abi, home string }{
		{abi.CodeToolFailed, tools.CodeToolFailed},
		{abi.NameToolError, bridge.NameToolError},
		{abi.NameArgumentError, bridge.NameArgumentError},
		// The guest SDK writes this code literally (bridge/guest).
		{"invalid_arguments", tools.CodeInvalidArguments},
	} {
		if tc.abi != tc.home {
			t.Errorf("%q != %q", tc.abi, tc.home)
		}
	}
}
