//go:build !race

package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestBuildIsReproducible holds that the digest depends only on the
// inputs: the same inputs give the same digest, and each input changes it.
func TestBuildIsReproducible(t *testing.T) {
	epoch := time.Unix(1_700_000_000, 0).UTC()
	digest := func(bin, ca string, at time.Time, version string) string {
		t.Helper()
		img, err := buildImage([]byte(bin), []byte(ca), at, version)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	ref := digest("ptcd", "certs", epoch, "v1")
	if again := digest("ptcd", "certs", epoch, "v1"); again != ref {
		t.Fatalf("two builds of the same inputs: %s and %s", ref, again)
	}
	for _, tc := range []struct {
		name    string
		digest  string
		changes bool
	}{
		{"binary", digest("ptcd2", "certs", epoch, "v1"), true},
		{"ca", digest("ptcd", "certs2", epoch, "v1"), true},
		{"epoch", digest("ptcd", "certs", epoch.Add(time.Second), "v1"), true},
		{"version", digest("ptcd", "certs", epoch, "v2"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.digest != ref) != tc.changes {
				t.Errorf("changing the %s: digest %s, reference %s", tc.name, tc.digest, ref)
			}
		})
	}
}

// TestImageContent checks the image's config (non-root user, entrypoint,
// no shell) and its one layer's entries (times, owners, modes).
func TestImageContent(t *testing.T) {
	epoch := time.Unix(1_700_000_000, 0).UTC()
	img, err := buildImage([]byte("ELF"), []byte("PEM"), epoch, "v1")
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || cf.Config.Entrypoint[0] != "/usr/local/bin/ptcd" || !cf.Created.Time.Equal(epoch) {
		t.Errorf("config: user %q, entrypoint %v, created %v", cf.Config.User, cf.Config.Entrypoint, cf.Created)
	}
	tr := tar.NewReader(mutate.Extract(img))
	seen := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s: time %v, want %v", h.Name, h.ModTime, epoch)
		}
		seen[strings.TrimSuffix(h.Name, "/")] = h
	}
	for _, tc := range []struct {
		name string
		mode int64
		uid  int
	}{
		{"usr/local/bin/ptcd", 0o755, 0},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, 0},
		{"etc/passwd", 0o644, 0},
		{"home/nonroot", 0o700, 65532},
		{"tmp", 0o1777, 0},
	} {
		h := seen[tc.name]
		if h == nil {
			t.Errorf("%s is missing", tc.name)
			continue
		}
		if h.Mode != tc.mode || h.Uid != tc.uid {
			t.Errorf("%s: mode %o uid %d, want %o %d", tc.name, h.Mode, h.Uid, tc.mode, tc.uid)
		}
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox"} {
		if seen[shell] != nil {
			t.Errorf("the image has %s", shell)
		}
	}
}

// TestExtractRefuses holds that unpacking refuses names that leave the
// root and entries other than files and directories.
func TestExtractRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		hdr  tar.Header
		want string
	}{
		{"parent", tar.Header{Name: "../evil", Typeflag: tar.TypeReg}, "unsafe name"},
		{"absolute", tar.Header{Name: "/etc/evil", Typeflag: tar.TypeReg}, "unsafe name"},
		{"symlink", tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc"}, "only files and directories"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			if err := tw.WriteHeader(&tc.hdr); err != nil {
				t.Fatal(err)
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			err := extract(tar.NewReader(&buf), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestOCISeccomp resolves the shipped profile for amd64 without
// capabilities: groups needing a capability or another architecture are
// left out, and clone is allowed only without namespace flags.
func TestOCISeccomp(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "seccomp", "runtime-default.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p dockerProfile
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	out := ociSeccomp(p)
	rules := out["syscalls"].([]ociSyscall)
	allowed := map[string]int{}
	for _, r := range rules {
		for _, n := range r.Names {
			if r.Action == "SCMP_ACT_ALLOW" {
				allowed[n]++
			}
		}
	}
	for _, tc := range []struct {
		syscall string
		rules   int
	}{
		{"read", 1},
		{"landlock_create_ruleset", 1},
		{"seccomp", 1},
		{"arch_prctl", 1},         // amd64 only
		{"mount", 0},              // CAP_SYS_ADMIN
		{"bpf", 0},                // CAP_SYS_ADMIN or CAP_BPF
		{"s390_runtime_instr", 0}, // another architecture
		{"clone", 1},              // only the rule without namespace flags
		{"unshare", 0},            // CAP_SYS_ADMIN
		{"ptrace", 1},             // kernel ≥ 4.8
		{"riscv_flush_icache", 0}, // another architecture
	} {
		if got := allowed[tc.syscall]; got != tc.rules {
			t.Errorf("%s: %d allowing rules, want %d", tc.syscall, got, tc.rules)
		}
	}
	if out["defaultAction"] != "SCMP_ACT_ERRNO" {
		t.Errorf("defaultAction %v", out["defaultAction"])
	}
}
