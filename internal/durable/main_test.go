package durable

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/internal/durable/pgtest"
	"github.com/ptcrun/ptc/internal/testenv"
)

// TestMain reports the tests skipped for want of redis-server or
// PostgreSQL, stops the PostgreSQL server the tests shared, and checks
// that no test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.Then(testenv.SkipReport(m), pgtest.Stop))
}
