package python

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	mrand "math/rand/v2"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

// clockResolution is what the interpreter's clocks report as their
// resolution, whichever clock stands behind them: it is fixed when the
// interpreter starts, before its job is known.
const clockResolution = sys.ClockResolution(1000)

// startKey seeds the random source of every interpreter's start, so that
// what the interpreter draws then (the key of its str hashing) is the
// same for every execution, warm or not: an interpreter started ahead of
// its job cannot draw from the job's seed, and a deterministic execution
// must iterate its sets alike when it is replayed or resumed elsewhere.
var startKey = [32]byte{'p', 't', 'c', ' ', 'p', 'y', 't', 'h', 'o', 'n', ' ', 's', 't', 'a', 'r', 't'}

// sources are an interpreter's clocks, sleep and random source. Until its
// job begins they are the start's: a virtual clock from the Unix epoch and
// a random source seeded with startKey, the same for every interpreter.
// begin switches them to the job's: a deterministic job gets a virtual
// clock from its ClockStart (runtime.VirtualClockStep a reading), sleeps
// that return at once and a random source seeded with its Seed (random,
// uuid4 and secrets follow); any other job the host's clocks, real sleeps
// (ending with the execution) and crypto/rand. The guest's goroutine alone
// calls them, begin included.
type sources struct {
	// virtual is whether the clocks are virtual, from start, readings
	// readings so far.
	virtual  bool
	start    time.Time
	readings int64
	// base is the origin of the host's monotonic clock, which goes on
	// from the start's readings.
	base  time.Time
	rand  io.Reader
	sleep func(ns int64)
}

func newSources() sources {
	return sources{virtual: true, start: time.Unix(0, 0), rand: mrand.NewChaCha8(startKey), sleep: func(int64) {}}
}

// begin switches to the job's sources; ctx ends with the execution.
func (c *sources) begin(job *runtime.Job, ctx context.Context) {
	if job.Deterministic {
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:], job.Seed)
		// The readings go on from the start's, so that the monotonic
		// clock never goes back; the start reads it as often every time.
		c.virtual, c.start = true, job.ClockStart
		c.rand, c.sleep = mrand.NewChaCha8(key), func(int64) {}
		return
	}
	c.virtual, c.base, c.rand, c.sleep = false, time.Now().Add(-time.Duration(c.readings)*runtime.VirtualClockStep), rand.Reader, wasm.Sleeper(ctx)
}

// configure sets the module's clocks, sleep and random source to c's.
func (c *sources) configure(cfg wazero.ModuleConfig) wazero.ModuleConfig {
	return cfg.
		WithWalltime(c.walltime, clockResolution).
		WithNanotime(c.nanotime, clockResolution).
		WithNanosleep(func(ns int64) { c.sleep(ns) }).
		WithRandSource(readerFunc(func(p []byte) (int, error) { return c.rand.Read(p) }))
}

func (c *sources) next() time.Duration {
	c.readings++
	return time.Duration(c.readings) * runtime.VirtualClockStep
}

func (c *sources) walltime() (int64, int32) {
	t := time.Now()
	if c.virtual {
		t = c.start.Add(c.next())
	}
	return t.Unix(), int32(t.Nanosecond())
}

func (c *sources) nanotime() int64 {
	if c.virtual {
		return int64(c.next())
	}
	return int64(time.Since(c.base))
}

// readerFunc is an io.Reader made of a function.
type readerFunc func(p []byte) (int, error)

// Read implements io.Reader.
func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
