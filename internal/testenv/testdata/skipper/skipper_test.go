// Package skipper is a fixture of testenv's tests: one test that needs a
// program npm ci never installs, one that passes.
package skipper

import (
	"os"
	"testing"

	"github.com/ptcrun/ptc/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.SkipReport(m).Run()) }

func TestNeedsNode(t *testing.T) { testenv.NodeBin(t, "ptc-testenv-never-installed") }

func TestAlsoNeedsNode(t *testing.T) { testenv.NodeBin(t, "ptc-testenv-never-installed") }

func TestRuns(t *testing.T) {}
