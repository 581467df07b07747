package executor

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/limits"
)

// BenchmarkPrepareModule measures checking a request's module when the
// request is prepared, in-process and with worker processes: "new" a
// module never seen (compiled), "repeat" the same module again (found
// checked). It reports this process's own CPU time per operation
// (self-cpu-ms/op) besides the wall time: with workers, the compile's CPU
// is a worker's.
func BenchmarkPrepareModule(b *testing.B) {
	base := brTablesModule(4, 10_000)
	for _, mode := range []string{"inprocess", "worker"} {
		cfg := Config{}
		if mode == "worker" {
			cfg = workerConfig(cfg)
		}
		e, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		prepare := func(b *testing.B, mod []byte) {
			req := core.Request{Script: core.Script{Language: core.LanguageWASM, Module: mod}}
			if _, err := e.PrepareContext(context.Background(), req, limits.Limits{}); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(mode+"/new", func(b *testing.B) {
			cpu := selfCPU()
			for i := 0; i < b.N; i++ {
				// A custom section makes each module new.
				name := strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 10)
				mod := append(append([]byte(nil), base...), 0, byte(len(name)+2), byte(len(name)))
				prepare(b, append(append(mod, name...), 0))
			}
			b.ReportMetric(float64(selfCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "self-cpu-ms/op")
		})
		b.Run(mode+"/repeat", func(b *testing.B) {
			prepare(b, base)
			b.ResetTimer()
			cpu := selfCPU()
			for i := 0; i < b.N; i++ {
				prepare(b, base)
			}
			b.ReportMetric(float64(selfCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "self-cpu-ms/op")
		})
		_ = e.Close()
	}
}

// selfCPU returns the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
