package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// dockerProfile is a seccomp profile in the format of moby's and
// containerd's default profiles: syscall groups that apply only with
// (includes) or without (excludes) some capabilities or architectures.
type dockerProfile struct {
	DefaultAction   string `json:"defaultAction"`
	DefaultErrnoRet *uint  `json:"defaultErrnoRet,omitempty"`
	ArchMap         []struct {
		Architecture     string   `json:"architecture"`
		SubArchitectures []string `json:"subArchitectures"`
	} `json:"archMap"`
	Syscalls []struct {
		Names    []string          `json:"names"`
		Action   string            `json:"action"`
		ErrnoRet *uint             `json:"errnoRet,omitempty"`
		Args     []json.RawMessage `json:"args,omitempty"`
		Includes filter            `json:"includes"`
		Excludes filter            `json:"excludes"`
	} `json:"syscalls"`
}

// filter is a syscall group's condition.
type filter struct {
	Caps      []string `json:"caps"`
	Arches    []string `json:"arches"`
	MinKernel string   `json:"minKernel"`
}

// ociSyscall is one rule of the OCI runtime spec's linux.seccomp.
type ociSyscall struct {
	Names    []string          `json:"names"`
	Action   string            `json:"action"`
	ErrnoRet *uint             `json:"errnoRet,omitempty"`
	Args     []json.RawMessage `json:"args,omitempty"`
}

// ociSeccomp resolves the profile for a container on amd64 with no
// capabilities, which is what Kubernetes' restricted profile leaves
// (drop ALL): groups that need a capability are left out, groups
// excluded for another architecture stay. minKernel conditions are taken
// as met (every kernel CI runs on is newer than the profile's 4.8).
func ociSeccomp(p dockerProfile) map[string]any {
	var rules []ociSyscall
	for _, s := range p.Syscalls {
		if len(s.Includes.Caps) > 0 {
			continue
		}
		if len(s.Includes.Arches) > 0 && !slices.Contains(s.Includes.Arches, "amd64") {
			continue
		}
		if slices.Contains(s.Excludes.Arches, "amd64") {
			continue
		}
		rules = append(rules, ociSyscall{Names: s.Names, Action: s.Action, ErrnoRet: s.ErrnoRet, Args: s.Args})
	}
	arches := []string{}
	for _, a := range p.ArchMap {
		if a.Architecture == "SCMP_ARCH_X86_64" {
			arches = append(append(arches, a.Architecture), a.SubArchitectures...)
		}
	}
	out := map[string]any{"defaultAction": p.DefaultAction, "architectures": arches, "syscalls": rules}
	if p.DefaultErrnoRet != nil {
		out["defaultErrnoRet"] = *p.DefaultErrnoRet
	}
	return out
}

// bindList collects -bind SRC:DST flags.
type bindList []string

func (b *bindList) String() string     { return strings.Join(*b, ",") }
func (b *bindList) Set(v string) error { *b = append(*b, v); return nil }

func specCmd(args []string) error {
	fs := flag.NewFlagSet("runtime-spec", flag.ContinueOnError)
	dir := fs.String("layout", "", "OCI image layout directory (its config gives the user, entrypoint and environment)")
	seccompFile := fs.String("seccomp", "", "seccomp profile in moby/containerd format (deploy/seccomp/runtime-default.json)")
	rootfs := fs.String("rootfs", "rootfs", "the unpacked image")
	var binds bindList
	fs.Var(&binds, "bind", "SRC:DST: bind-mount a host directory read-write (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *seccompFile == "" {
		return errors.New("runtime-spec needs -layout and -seccomp")
	}
	img, err := firstImage(*dir)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(*seccompFile)
	if err != nil {
		return err
	}
	var prof dockerProfile
	if err := json.Unmarshal(raw, &prof); err != nil {
		return fmt.Errorf("%s: %w", *seccompFile, err)
	}
	u, g, ok := strings.Cut(cf.Config.User, ":")
	if !ok {
		g = u
	}
	uidN, err1 := strconv.Atoi(u)
	gidN, err2 := strconv.Atoi(g)
	if err1 != nil || err2 != nil || uidN == 0 {
		return fmt.Errorf("image user %q: want a numeric non-root uid:gid", cf.Config.User)
	}
	mounts := []map[string]any{
		{"destination": "/proc", "type": "proc", "source": "proc"},
		{"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": []string{"nosuid", "noexec", "nodev"}},
		{"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": []string{"nosuid", "noexec", "nodev", "ro"}},
		// /tmp as Kubernetes' emptyDir: the one writable place.
		{"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "nodev", "mode=1777", "size=262144k"}},
	}
	for _, b := range binds {
		src, dst, ok := strings.Cut(b, ":")
		if !ok {
			return fmt.Errorf("-bind %q: want SRC:DST", b)
		}
		mounts = append(mounts, map[string]any{"destination": dst, "type": "bind", "source": src, "options": []string{"rbind", "rw", "nosuid", "nodev"}})
	}
	none := []string{}
	spec := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"terminal":        false,
			"user":            map[string]int{"uid": uidN, "gid": gidN},
			"args":            append(slices.Clone(cf.Config.Entrypoint), fs.Args()...),
			"env":             cf.Config.Env,
			"cwd":             "/",
			"capabilities":    map[string][]string{"bounding": none, "effective": none, "inheritable": none, "permitted": none, "ambient": none},
			"noNewPrivileges": true,
		},
		"root":     map[string]any{"path": *rootfs, "readonly": true},
		"hostname": "ptcd",
		"mounts":   mounts,
		"linux": map[string]any{
			// No network namespace: the container shares the host's, as a
			// pod's containers share the pod's.
			"namespaces":    []map[string]string{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}},
			"seccomp":       ociSeccomp(prof),
			"maskedPaths":   []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"},
			"readonlyPaths": []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(spec)
}
