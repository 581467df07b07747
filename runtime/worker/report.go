package worker

import (
	"fmt"
	"os"
	"strings"

	workerv1 "github.com/ptcrun/ptc/proto/ptc/worker/v1"
)

// Report says which isolation measures are in force, as detected on this
// host: for `ptcd check` and start-up logs.
type Report struct {
	// Mode is "worker" or "inprocess".
	Mode string
	// Items lists each measure in a fixed order.
	Items []Item
}

// Item is one isolation measure.
type Item struct {
	// Name names the measure, e.g. "rlimit_data".
	Name string
	// InForce reports whether the measure applies.
	InForce bool
	// Detail says how, or why not.
	Detail string
}

// String renders the report one measure per line.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\n", r.Mode)
	for _, it := range r.Items {
		state := "no "
		if it.InForce {
			state = "yes"
		}
		fmt.Fprintf(&b, "%-20s %s  %s\n", it.Name, state, it.Detail)
	}
	return b.String()
}

// Get returns the item named name.
func (r Report) Get(name string) (Item, bool) {
	for _, it := range r.Items {
		if it.Name == name {
			return it, true
		}
	}
	return Item{}, false
}

// Report returns what the pool's workers put in force, as the first worker
// reported it.
func (p *Pool) Report() Report {
	if p.cfg.Mode == ModeInProcess {
		return inProcessReport()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.report == nil {
		return Report{Mode: ModeWorker.String()}
	}
	return *p.report
}

// Check starts one worker with cfg, reports what it put in force and
// stops it. It is what `ptcd check` runs.
func Check(cfg Config) (Report, error) {
	if cfg.Mode == ModeInProcess {
		return inProcessReport(), nil
	}
	cfg.Workers = -1
	p, err := NewPool(cfg)
	if err != nil {
		return Report{}, err
	}
	defer p.Close()
	return p.Report(), nil
}

func inProcessReport() Report {
	return Report{Mode: ModeInProcess.String(), Items: []Item{
		{Name: "process_isolation", Detail: "executions run inside the host process"},
		{Name: "memory_limit", Detail: "best effort: size guards and a heap watchdog on the shared heap, no OS limit"},
		{Name: "cpu_limit", InForce: true, Detail: "OS thread CPU clock of the execution"},
	}}
}

// buildReport turns a worker's Ready frame into a Report.
func (p *Pool) buildReport(r *workerv1.Ready, netns bool) Report {
	rep := Report{Mode: ModeWorker.String()}
	add := func(name string, ok bool, format string, args ...any) {
		rep.Items = append(rep.Items, Item{Name: name, InForce: ok, Detail: fmt.Sprintf(format, args...)})
	}
	add("process_isolation", true, "each execution runs in a worker process (%d per process)", p.cfg.ExecutionsPerWorker)
	if r.GetRlimitDataBytes() > 0 {
		add("rlimit_data", true, "RLIMIT_DATA %d MiB per worker, lowered per execution to twice its memory limit plus %d MiB",
			r.GetRlimitDataBytes()>>20, rlimitSlack>>20)
	} else {
		add("rlimit_data", false, "setrlimit failed: %s", r.GetRlimitError())
	}
	cg := detectCgroup()
	add("cgroup_v2_memory", false, "%s", cg)
	add("heap_watchdog", true, "runtime/metrics live heap checked after every GC and every %s–%s, Go memory limit near the execution's limit", busyInterval, maxInterval)
	add("cpu_clock", true, "OS thread CPU clock (CLOCK_THREAD_CPUTIME) of the execution's locked thread")
	add("empty_environment", r.GetEnvironmentSize() == 0, "%d environment variables", r.GetEnvironmentSize())
	if n := len(r.GetInheritedFds()); n > 0 {
		add("no_inherited_fds", true, "0-2 are /dev/null and a stderr pipe, 3 the socket; the worker closed %d inherited descriptors %v at start", n, r.GetInheritedFds())
	} else {
		add("no_inherited_fds", true, "0-2 are /dev/null and a stderr pipe, 3 the socket; nothing else was inherited")
	}
	add("own_process_group", int(r.GetProcessGroup()) == int(r.GetPid()), "process group %d", r.GetProcessGroup())
	add("no_new_privs", r.GetNoNewPrivs(), "PR_SET_NO_NEW_PRIVS")
	own, _ := os.Readlink("/proc/self/ns/net")
	switch {
	case p.cfg.NoNetworkNamespace:
		add("private_network", false, "disabled by configuration")
	case netns && r.GetNetNamespace() != "" && r.GetNetNamespace() != own:
		add("private_network", true, "network namespace %s (supervisor: %s)", r.GetNetNamespace(), own)
	case p.netnsErr != nil:
		add("private_network", false, "CLONE_NEWNET not permitted: %v", p.netnsErr)
	default:
		add("private_network", false, "the worker shares the supervisor's network namespace")
	}
	return rep
}

// detectCgroup describes the cgroup memory controller available here.
func detectCgroup() string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		return "not used: this host has no cgroup v2 hierarchy (cgroup v1), so memory.max cannot be set per worker; RLIMIT_DATA and the heap watchdog enforce memory"
	}
	return "not used: cgroup v2 is present, but per-worker memory.max needs a delegated cgroup; RLIMIT_DATA and the heap watchdog enforce memory"
}
