package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/ptcrun/ptc/internal/plural"
	"github.com/ptcrun/ptc/internal/runtime/worker"
)

// report is what `ptcd check` prints and ptcd logs at start: which
// isolation measures the worker processes have in force on this host.
type report struct {
	// mode is "worker" or "inprocess".
	mode string
	// items lists each measure in a fixed order.
	items []reportItem
}

// reportItem is one isolation measure.
type reportItem struct {
	name    string
	inForce bool
	detail  string
}

// String renders the report one measure per line.
func (r report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode: %s\n", r.mode)
	for _, it := range r.items {
		state := "no "
		if it.inForce {
			state = "yes"
		}
		fmt.Fprintf(&b, "%-20s %s  %s\n", it.name, state, it.detail)
	}
	return b.String()
}

// attrs renders the report as log attributes: the mode, how many
// measures are in force, and one attribute per measure ("yes: …" or
// "no: …") in the group isolation, so that a text log shows one readable
// key per measure and a JSON log an object.
func (r report) attrs() []any {
	in := 0
	measures := make([]any, 0, len(r.items))
	for _, it := range r.items {
		state := "no: "
		if it.inForce {
			state = "yes: "
			in++
		}
		measures = append(measures, slog.String(it.name, state+it.detail))
	}
	return []any{"mode", r.mode, "in_force", fmt.Sprintf("%d of %d", in, len(r.items)), slog.Group("isolation", measures...)}
}

// get returns the item named name.
func (r report) get(name string) (reportItem, bool) {
	for _, it := range r.items {
		if it.name == name {
			return it, true
		}
	}
	return reportItem{}, false
}

// reportOf renders the facts a worker pool reports.
func reportOf(f worker.Facts, netnsDisabled bool) report {
	if f.Mode == worker.ModeInProcess {
		return report{mode: f.Mode.String(), items: []reportItem{
			{name: "process_isolation", detail: "executions run inside the host process"},
			{name: "memory_limit", detail: "best effort: size guards and a heap watchdog on the shared heap, no OS limit"},
			{name: "cpu_limit", inForce: true, detail: "OS thread CPU clock of the execution"},
			{name: "no_filesystem", detail: "scripts run in the server process, which keeps its filesystem access; only the engine's own guards stand between a script and the host"},
		}}
	}
	rep := report{mode: f.Mode.String()}
	if f.Pid == 0 {
		return rep // no worker has started
	}
	add := func(name string, ok bool, format string, args ...any) {
		rep.items = append(rep.items, reportItem{name: name, inForce: ok, detail: fmt.Sprintf(format, args...)})
	}
	add("process_isolation", true, "each execution runs in a worker process (%d per process)", f.ExecutionsPerWorker)
	if f.RlimitDataBytes > 0 {
		add("rlimit_data", true, "RLIMIT_DATA %d MiB per worker, lowered per execution to twice its memory limit plus %d MiB",
			f.RlimitDataBytes>>20, f.RlimitSlackBytes>>20)
	} else {
		add("rlimit_data", false, "setrlimit failed: %s", f.RlimitError)
	}
	if f.CgroupV2 {
		add("cgroup_v2_memory", false, "not used: cgroup v2 is present, but per-worker memory.max needs a delegated cgroup; RLIMIT_DATA and the heap watchdog enforce memory")
	} else {
		add("cgroup_v2_memory", false, "not used: this host has no cgroup v2 hierarchy (cgroup v1), so memory.max cannot be set per worker; RLIMIT_DATA and the heap watchdog enforce memory")
	}
	add("heap_watchdog", true, "runtime/metrics live heap checked after every GC and every %s–%s, Go memory limit near the execution's limit", f.WatchdogBusy, f.WatchdogIdle)
	add("cpu_clock", true, "OS thread CPU clock (CLOCK_THREAD_CPUTIME) of the execution's locked thread")
	add("empty_environment", f.EnvironmentSize == 0, "%s", plural.Count(f.EnvironmentSize, "environment variable", "environment variables"))
	if n := len(f.InheritedFDs); n > 0 {
		add("no_inherited_fds", true, "0-2 are /dev/null and a stderr pipe, 3 the socket; the worker closed %s %v at start",
			plural.Count(n, "inherited descriptor", "inherited descriptors"), f.InheritedFDs)
	} else {
		add("no_inherited_fds", true, "0-2 are /dev/null and a stderr pipe, 3 the socket; nothing else was inherited")
	}
	add("own_process_group", f.ProcessGroup == f.Pid, "process group %d", f.ProcessGroup)
	add("no_new_privs", f.NoNewPrivs, "PR_SET_NO_NEW_PRIVS")
	switch {
	case f.LandlockScope != "":
		add("landlock", true, "Landlock ABI %d ruleset with no rule on %s: every filesystem access, TCP bind and connect refused", f.LandlockABI, f.LandlockScope)
	case f.LandlockABI > 0:
		add("landlock", false, "Landlock ABI %d, not in force: %s", f.LandlockABI, f.LandlockError)
	default:
		add("landlock", false, "%s", f.LandlockError)
	}
	if f.Seccomp {
		add("seccomp", true, "seccomp-bpf filter on every thread: open, exec, stat and every other system call naming a path, io_uring and socket creation fail with EPERM")
	} else {
		add("seccomp", false, "%s", f.SeccompError)
	}
	if f.OpenProbeError != "" {
		add("no_filesystem", true, "after its setup the worker cannot open files: an open of / failed (%s)", f.OpenProbeError)
	} else {
		add("no_filesystem", false, "after its setup the worker could still open /")
	}
	switch {
	case netnsDisabled || f.NetNamespaceDisabled:
		add("private_network", false, "disabled by configuration")
	case f.NetNamespace != "" && f.NetNamespace != f.SupervisorNetNamespace:
		add("private_network", true, "network namespace %s (supervisor: %s)", f.NetNamespace, f.SupervisorNetNamespace)
	case f.NetNamespaceError != "":
		add("private_network", false, "CLONE_NEWNET not permitted: %v", f.NetNamespaceError)
	default:
		add("private_network", false, "the worker shares the supervisor's network namespace")
	}
	return rep
}
