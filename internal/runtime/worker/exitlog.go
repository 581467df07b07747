package worker

import (
	"context"
	"log/slog"
	"sort"
	"strings"

	"github.com/ptcrun/ptc/internal/fault"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
)

// What the operator is told when a worker ends. A healthy worker writes
// nothing on stderr, so whatever it wrote is worth a record: Go's fatal
// errors ("fatal error: ...", "runtime: out of memory"), a panic, a signal
// dump (SIGQUIT). So is a death the supervisor did not cause. The record
// names the executions the worker was running, so that the operator can
// join it with the failed calls; the stderr it quotes is bounded by
// stderrHead.

// logExit logs how a worker ended (end, from its lifecycle), when there
// is something to tell. A worker that exited with status 0 on its own
// failed nothing worth an ERROR: only its stderr, if any, is logged.
func (w *proc) logExit(execs map[uint64]*execState, outs map[uint64]*ptcruntime.Outcome, end procEnd, waitErr error) {
	out := strings.TrimSpace(w.stderr.String())
	died := end.died() && waitErr != nil
	if out == "" && !died {
		return
	}
	ids := make([]string, 0, len(execs))
	for _, es := range execs {
		ids = append(ids, es.job.ExecutionID)
	}
	sort.Strings(ids)
	attrs := []slog.Attr{slog.Int("pid", w.pid), slog.String("exit", exitText(waitErr))}
	switch len(ids) {
	case 0:
	case 1:
		attrs = append(attrs, slog.String("execution_id", ids[0]))
	default:
		attrs = append(attrs, slog.Any("execution_ids", ids))
	}
	if end.state == stateKilled {
		attrs = append(attrs, slog.String("stopped", end.reason))
	}
	if out != "" {
		attrs = append(attrs, slog.String("stderr", out), slog.Int64("stderr_bytes", w.stderr.written()))
	}
	level, msg := slog.LevelWarn, "worker process wrote to stderr"
	if died {
		msg = "worker process died"
		// A death the script caused (its memory, its nesting) is the
		// script's outcome; any other is ptc's failure.
		level = slog.LevelWarn
		if len(outs) == 0 {
			level = slog.LevelError
		}
		for _, out := range outs {
			if out.Err.Kind == fault.KindInternal {
				level = slog.LevelError
			}
		}
	}
	w.pool.log.LogAttrs(context.Background(), level, msg, attrs...)
}

// exitText describes how a worker process ended.
func exitText(waitErr error) string {
	if waitErr == nil {
		return "exit status 0"
	}
	return waitErr.Error()
}
