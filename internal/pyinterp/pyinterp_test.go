package pyinterp

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tarball returns a gzipped tarball holding files.
func tarball(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, b := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func integrity(b []byte) string {
	s := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(s[:])
}

func TestInstall(t *testing.T) {
	mod := []byte("\x00asm\x01\x00\x00\x00 not really python")
	tgz := tarball(t, map[string][]byte{"package/README.md": []byte("x"), "package/dist/python.wasm": mod})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing.tgz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(tgz)
	}))
	defer srv.Close()
	good := Source{URL: srv.URL + "/p.tgz", Integrity: integrity(tgz), Member: "package/dist/python.wasm", SHA256: Sum(mod)}
	cases := []struct {
		name string
		src  func(Source) Source
		want error
		msg  string
	}{
		{name: "verified", src: func(s Source) Source { return s }},
		{name: "tarball altered", src: func(s Source) Source { s.Integrity = integrity([]byte("other")); return s }, want: ErrMismatch, msg: "integrity"},
		{name: "module altered", src: func(s Source) Source { s.SHA256 = Sum([]byte("other")); return s }, want: ErrMismatch, msg: "SHA-256"},
		{name: "no such member", src: func(s Source) Source { s.Member = "package/dist/other.wasm"; return s }, msg: "has no package/dist/other.wasm"},
		{name: "not found", src: func(s Source) Source { s.URL = srv.URL + "/missing.tgz"; return s }, msg: "404"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "cache", "python.wasm")
			src := c.src(good)
			err := Install(context.Background(), srv.Client(), src, dst)
			if c.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				b, err := Load(dst, src.SHA256)
				if err != nil || !bytes.Equal(b, mod) {
					t.Fatalf("Load after Install: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.msg) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("error %v, want %v containing %q", err, c.want, c.msg)
			}
			if _, serr := os.Stat(dst); !errors.Is(serr, os.ErrNotExist) {
				t.Fatalf("a refused install left %s", dst)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "python.wasm")
	if err := os.WriteFile(p, []byte("module"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, sum string
		want            error
	}{
		{name: "configured and matching", path: p, sum: Sum([]byte("module"))},
		{name: "hash differs", path: p, sum: SHA256, want: ErrMismatch},
		{name: "pinned hash by default", path: p, want: ErrMismatch},
		{name: "missing", path: filepath.Join(dir, "none.wasm"), want: ErrNotInstalled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.path, c.sum)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if c.want == ErrNotInstalled && !strings.Contains(err.Error(), InstallCommand) {
				t.Fatalf("error %q does not name %q", err, InstallCommand)
			}
		})
	}
}
