package worker

import (
	"os"
	"time"

	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// Facts are the isolation measures a pool's workers have in force on this
// host, as its first worker reported them: what `ptcd check` and the
// start-up log render (cmd/ptcd owns the report).
type Facts struct {
	// Mode is the pool's mode; in ModeInProcess only Mode is set.
	Mode Mode
	// ExecutionsPerWorker is the executions one worker runs at once.
	ExecutionsPerWorker int
	// RlimitDataBytes is the RLIMIT_DATA of a worker, 0 when none could be
	// set (RlimitError says why); each execution lowers it to twice its
	// memory limit plus RlimitSlackBytes.
	RlimitDataBytes  int64
	RlimitError      string
	RlimitSlackBytes int64
	// WatchdogBusy and WatchdogIdle are the heap watchdog's check
	// intervals while the script computes and while it waits.
	WatchdogBusy, WatchdogIdle time.Duration
	// EnvironmentSize is the number of environment variables a worker sees.
	EnvironmentSize int
	// InheritedFDs lists descriptors a worker found open at start and
	// closed.
	InheritedFDs []int32
	// Pid and ProcessGroup are the worker's; equal when it leads its own
	// process group.
	Pid, ProcessGroup int
	// NoNewPrivs reports PR_SET_NO_NEW_PRIVS.
	NoNewPrivs bool
	// NetNamespace is the worker's network namespace, SupervisorNetNamespace
	// the supervisor's; NetNamespaceDisabled says the configuration turned
	// the private namespace off, NetNamespaceError why it could not be
	// created.
	NetNamespace, SupervisorNetNamespace string
	NetNamespaceDisabled                 bool
	NetNamespaceError                    string
	// CgroupV2 reports a cgroup v2 hierarchy on the host.
	CgroupV2 bool
	// LandlockABI is the kernel's Landlock ABI version (0: unavailable);
	// LandlockScope is the threads the ruleset restricts ("all threads",
	// or "script threads" when the binary, linked with cgo, cannot restrict
	// every thread at once), empty when Landlock is not in force, and
	// LandlockError says why.
	LandlockABI   int
	LandlockScope string
	LandlockError string
	// Seccomp reports the seccomp-bpf filter that refuses every system
	// call naming a path; SeccompError says why it is not in force.
	Seccomp      bool
	SeccompError string
	// OpenProbeError is the error an open of "/" got in the worker after
	// its lockdown, the proof that the filesystem is out of reach; empty
	// when the open succeeded.
	OpenProbeError string
}

// Facts returns what the pool's workers put in force, as the first worker
// reported it.
func (p *Pool) Facts() Facts {
	if p.cfg.Mode == ModeInProcess {
		return Facts{Mode: ModeInProcess}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.facts == nil {
		return Facts{Mode: ModeWorker, ExecutionsPerWorker: p.cfg.ExecutionsPerWorker}
	}
	return *p.facts
}

// Check starts one worker with cfg, returns what it put in force and stops
// it: what `ptcd check` runs.
func Check(cfg Config) (Facts, error) {
	if cfg.Mode == ModeInProcess {
		return Facts{Mode: ModeInProcess}, nil
	}
	cfg.Workers = -1
	p, err := NewPool(cfg)
	if err != nil {
		return Facts{Mode: ModeWorker}, err
	}
	defer p.Close()
	return p.Facts(), nil
}

// workerFacts turns a worker's Ready frame into Facts.
func (p *Pool) workerFacts(r *wp.Ready) Facts {
	f := Facts{
		Mode:                 ModeWorker,
		ExecutionsPerWorker:  p.cfg.ExecutionsPerWorker,
		RlimitDataBytes:      r.GetRlimitDataBytes(),
		RlimitError:          r.GetRlimitError(),
		RlimitSlackBytes:     rlimitSlack,
		WatchdogBusy:         busyInterval,
		WatchdogIdle:         maxInterval,
		EnvironmentSize:      int(r.GetEnvironmentSize()),
		InheritedFDs:         r.GetInheritedFds(),
		Pid:                  int(r.GetPid()),
		ProcessGroup:         int(r.GetProcessGroup()),
		NoNewPrivs:           r.GetNoNewPrivs(),
		NetNamespace:         r.GetNetNamespace(),
		NetNamespaceDisabled: p.cfg.NoNetworkNamespace,
	}
	if l := r.GetLockdown(); l != nil {
		f.LandlockABI = int(l.GetLandlockAbi())
		f.LandlockScope = l.GetLandlockScope()
		f.LandlockError = l.GetLandlockError()
		f.Seccomp = l.GetSeccomp()
		f.SeccompError = l.GetSeccompError()
		f.OpenProbeError = l.GetOpenProbeError()
	} else {
		f.SeccompError = "the worker reported no lockdown"
		f.LandlockError = f.SeccompError
	}
	f.SupervisorNetNamespace, _ = os.Readlink("/proc/self/ns/net")
	if p.netnsErr != nil {
		f.NetNamespaceError = p.netnsErr.Error()
	}
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	f.CgroupV2 = err == nil
	return f
}
