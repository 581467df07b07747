package python

import (
	"testing"

	"github.com/ptcrun/ptc/internal/limits"
)

func TestSmoke(t *testing.T) {
	out, logs := run(t, "print('hi')\nx = await tools.echo({'a': 1})\ny = await tools.echo(b=2)\nreturn [x, y, input]", `{"k":true}`, limits.Limits{})
	t.Logf("%s %v %v cpu=%v mem=%d", out.Result, out.Err, logs, out.CPUTime, out.PeakMemoryBytes)
}
