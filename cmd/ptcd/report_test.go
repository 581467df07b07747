package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/runtime/worker"
)

// TestCheckReport starts a worker as `ptcd check` does and checks the
// report rendered from its facts.
func TestCheckReport(t *testing.T) {
	f, err := worker.Check(worker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rep := reportOf(f, false)
	t.Logf("\n%s", rep)
	for _, name := range []string{"process_isolation", "rlimit_data", "heap_watchdog", "cpu_clock",
		"empty_environment", "no_inherited_fds", "own_process_group", "no_new_privs"} {
		it, ok := rep.get(name)
		if !ok || !it.inForce {
			t.Errorf("%s: %+v, want in force", name, it)
		}
	}
	if it, ok := rep.get("private_network"); !ok {
		t.Error("private_network missing")
	} else if os.Geteuid() == 0 && !it.inForce {
		t.Logf("private network not in force as root: %s", it.detail)
	}
	if _, ok := rep.get("cgroup_v2_memory"); !ok {
		t.Error("cgroup_v2_memory missing")
	}

	cfg := worker.Config{NoNetworkNamespace: true}
	off, err := worker.Check(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if it, _ := reportOf(off, cfg.NoNetworkNamespace).get("private_network"); it.inForce || !strings.Contains(it.detail, "disabled") {
		t.Errorf("private_network with NoNetworkNamespace: %+v", it)
	}
	in, err := worker.Check(worker.Config{Mode: worker.ModeInProcess})
	if r := reportOf(in, false); err != nil || r.mode != "inprocess" || len(r.items) == 0 {
		t.Errorf("in-process report %+v %v", r, err)
	}
}

// TestCheckReportCounts checks the counts of the report agree with their
// noun.
func TestCheckReportCounts(t *testing.T) {
	cases := []struct {
		name  string
		facts worker.Facts
		item  string
		want  string
	}{
		{"one variable", worker.Facts{Pid: 1, EnvironmentSize: 1}, "empty_environment", "1 environment variable"},
		{"two variables", worker.Facts{Pid: 1, EnvironmentSize: 2}, "empty_environment", "2 environment variables"},
		{"one descriptor", worker.Facts{Pid: 1, InheritedFDs: []int32{7}}, "no_inherited_fds", "the worker closed 1 inherited descriptor [7] at start"},
		{"two descriptors", worker.Facts{Pid: 1, InheritedFDs: []int32{7, 9}}, "no_inherited_fds", "the worker closed 2 inherited descriptors [7 9] at start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it, ok := reportOf(tc.facts, false).get(tc.item)
			if !ok || !strings.HasSuffix(it.detail, tc.want) {
				t.Fatalf("%s: %q, want it to end with %q", tc.item, it.detail, tc.want)
			}
		})
	}
}

// TestReportLogRecord checks that the isolation report logs one
// attribute per measure, readable in a text log (no escaped newlines) and
// an object in a JSON log.
func TestReportLogRecord(t *testing.T) {
	rep := reportOf(worker.Facts{Mode: worker.ModeInProcess}, false)
	var text, js strings.Builder
	slog.New(slog.NewTextHandler(&text, nil)).Info("execution isolation", rep.attrs()...)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("execution isolation", rep.attrs()...)
	if strings.Contains(text.String(), `\n`) || strings.Count(text.String(), "\n") != 1 {
		t.Errorf("text record is not one readable line: %s", text.String())
	}
	for _, want := range []string{`mode=inprocess`, `in_force="1 of 4"`, `isolation.cpu_limit="yes: OS thread CPU clock of the execution"`,
		`isolation.process_isolation="no: executions run inside the host process"`} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text record lacks %s: %s", want, text.String())
		}
	}
	var rec struct {
		Isolation map[string]string `json:"isolation"`
	}
	if err := json.Unmarshal([]byte(js.String()), &rec); err != nil || len(rec.Isolation) != 4 {
		t.Errorf("JSON record's isolation = %v (%v), want an object of 4 measures: %s", rec.Isolation, err, js.String())
	}
}
