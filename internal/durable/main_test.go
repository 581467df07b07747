package durable

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/internal/testenv"
)

// TestMain reports the tests skipped for want of redis-server, and
// checks that no test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(testenv.SkipReport(m)) }
