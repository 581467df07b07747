package config

import (
	"time"

	"github.com/ptcrun/ptc/runtime/worker"
)

// WorkerConfig maps the workers section onto the worker pool's
// configuration (ptcd and `ptc mcp` run scripts in that pool).
func (c *Config) WorkerConfig() worker.Config {
	w := c.Workers
	mode := worker.ModeWorker
	if w.Mode == "inprocess" {
		mode = worker.ModeInProcess
	}
	idle := w.Idle
	if idle == 0 {
		idle = -1 // the pool's "none"
	}
	return worker.Config{
		Mode:                    mode,
		Workers:                 idle,
		MaxWorkers:              w.Max,
		ExecutionsPerWorker:     w.ExecutionsPerWorker,
		IdleTimeout:             time.Duration(w.IdleTimeout),
		RecycleAfter:            w.RecycleAfter,
		MaxExecutionMemoryBytes: c.Policy().Ceilings.MemoryBytes,
	}
}
