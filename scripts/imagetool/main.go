// Command imagetool builds ptcd's OCI image without a container daemon and
// prepares it for runc: scripts/build-image.sh and scripts/test-image.sh
// are its callers (docs/deploy.md).
//
//	imagetool build -binary ptcd -ca ca-certificates.crt -epoch N -out DIR [-tar FILE] [-tag T]
//	imagetool unpack -layout DIR -rootfs DIR
//	imagetool runtime-spec -layout DIR -seccomp FILE -rootfs DIR [-bind SRC:DST] -- ARGS...
//
// build writes an OCI image layout whose digest depends only on its inputs:
// one layer written here with sorted entries, owner root, and every time set
// to -epoch (SOURCE_DATE_EPOCH), and a config whose times are the same.
// It is a tool of the repository, not linked into ptcd or ptc; its tests
// are left out under the race detector (they start no goroutine).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: imagetool build|unpack|runtime-spec [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = buildCmd(os.Args[2:])
	case "unpack":
		err = unpackCmd(os.Args[2:])
	case "runtime-spec":
		err = specCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want build, unpack or runtime-spec", os.Args[1])
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "imagetool:", err)
		}
		os.Exit(1)
	}
}
