package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ptcrun/ptc/internal/suggest"
)

// parseFlags parses args with fs and reports a mistake on one line of
// stderr: an unknown flag with the defined flag it is nearest to, or a
// bad value, and where the whole usage is. -h prints the command's flags
// on stdout. ok is false when the command should exit with code.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if err == nil {
		return exitOK, true
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "usage of %s (ptc help shows every command):\n", fs.Name())
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return exitOK, false
	}
	fmt.Fprintf(stderr, "%s: %s; ptc help lists every flag\n", fs.Name(), flagError(fs, err))
	return exitUsage, false
}

// flagError rewords the flag package's error: an unknown flag names the
// nearest defined one.
func flagError(fs *flag.FlagSet, err error) string {
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		return err.Error()
	}
	msg := fmt.Sprintf("unknown flag --%s", name)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if s := suggest.Closest(name, names); s != "" {
		msg += fmt.Sprintf(" (did you mean --%s?)", s)
	}
	return msg
}
