package worker

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestWorkersOOMScore: every worker raises its oom_score_adj, so the
// kernel's OOM killer picks a worker before the supervisor, whose own
// score stays as it was.
func TestWorkersOOMScore(t *testing.T) {
	own := oomScore(t, os.Getpid())
	if own == workerOOMScoreAdj {
		t.Skipf("this process already has oom_score_adj %d: a worker's raise cannot be told apart", own)
	}
	// One worker: the one that ran the job has made its set-up.
	p := newPool(t, Config{Workers: 1, MaxWorkers: 1})
	job, _ := newJob(t, `return 1`, testLimits())
	if out := p.Run(context.Background(), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	pids := workerPIDs(t)
	if len(pids) == 0 {
		t.Fatal("no worker processes")
	}
	for _, pid := range pids {
		if got := oomScore(t, pid); got != workerOOMScoreAdj {
			t.Errorf("worker %d: oom_score_adj %d, want %d", pid, got, workerOOMScoreAdj)
		}
	}
	if got := oomScore(t, os.Getpid()); got != own {
		t.Errorf("the supervisor's oom_score_adj changed from %d to %d", own, got)
	}
}

// oomScore reads a process's oom_score_adj.
func oomScore(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/oom_score_adj")
	if err != nil {
		t.Skipf("no oom_score_adj: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
