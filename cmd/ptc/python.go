package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ptcrun/ptc/internal/pyinterp"
)

// pythonCmd is `ptc python install`: it downloads the pinned CPython for
// WASI, verifies it and puts it in the user's cache, where `ptc run` and
// an unconfigured ptcd find it.
func pythonCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || args[0] != "install" {
		fmt.Fprintf(stderr, "usage: ptc python install\n")
		return exitUsage
	}
	dst, err := pyinterp.CachePath()
	if err != nil {
		fmt.Fprintf(stderr, "ptc: %v\n", err)
		return exitUsage
	}
	if _, err := pyinterp.Load(dst, ""); err == nil {
		fmt.Fprintf(stdout, "ptc: CPython %s is installed at %s (SHA-256 %s)\n", pyinterp.Version, dst, pyinterp.SHA256)
		return exitOK
	}
	fmt.Fprintf(stderr, "ptc: downloading CPython %s for WASI from %s\n", pyinterp.Version, pyinterp.TarballURL)
	client := &http.Client{Timeout: 10 * time.Minute}
	if err := pyinterp.Install(ctx, client, pyinterp.Pinned, dst); err != nil {
		fmt.Fprintf(stderr, "ptc: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "ptc: CPython %s installed at %s (SHA-256 %s, verified)\n", pyinterp.Version, dst, pyinterp.SHA256)
	return exitOK
}
