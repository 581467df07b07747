package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Image constants: the non-root user of Kubernetes' restricted profile
// (the "nonroot" user of distroless images) and where things live.
const (
	uid        = 65532
	binPath    = "usr/local/bin/ptcd"
	caPath     = "etc/ssl/certs/ca-certificates.crt"
	configDir  = "etc/ptcd"
	homeDir    = "home/nonroot"
	refNameKey = "org.opencontainers.image.ref.name"
)

// entry is one file or directory of the image's single layer.
type entry struct {
	name string
	mode int64
	uid  int
	dir  bool
	body []byte
}

// layerEntries lists the layer's content in the order it is written:
// parents before children, sorted by name, so that the same inputs give
// the same bytes.
func layerEntries(binary, ca []byte) []entry {
	return []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: configDir + "/", mode: 0o755, dir: true},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: caPath, mode: 0o644, body: ca},
		{name: "home/", mode: 0o755, dir: true},
		{name: homeDir + "/", mode: 0o700, uid: uid, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: binPath, mode: 0o755, body: binary},
	}
}

// layerTar writes the entries as a tar stream with every time at epoch.
func layerTar(entries []entry, epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid,
			ModTime: epoch, Format: tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// buildImage assembles the image: an empty OCI base, the layer, and a
// config that runs ptcd as uid 65532 with no shell to fall back on.
func buildImage(binary, ca []byte, epoch time.Time, version string) (v1.Image, error) {
	raw, err := layerTar(layerEntries(binary, ca), epoch)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	created := v1.Time{Time: epoch}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "scripts/build-image.sh", Comment: "ptcd " + version},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = "amd64"
	cf.OS = "linux"
	cf.Created = created
	cf.Config = v1.Config{
		User:         strconv.Itoa(uid) + ":" + strconv.Itoa(uid),
		Entrypoint:   []string{"/" + binPath},
		Env:          []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=/" + caPath, "HOME=/" + homeDir},
		WorkingDir:   "/",
		ExposedPorts: map[string]struct{}{"7878/tcp": {}, "9090/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":   "ptcd",
			"org.opencontainers.image.version": version,
			"org.opencontainers.image.source":  "https://github.com/ptcrun/ptc",
			"org.opencontainers.image.created": epoch.UTC().Format(time.RFC3339),
		},
	}
	return mutate.ConfigFile(img, cf)
}

func buildCmd(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	binary := fs.String("binary", "", "the static ptcd to put in the image")
	ca := fs.String("ca", "/etc/ssl/certs/ca-certificates.crt", "CA certificates (PEM bundle)")
	epochFlag := fs.Int64("epoch", -1, "every time in the image, seconds since 1970 (SOURCE_DATE_EPOCH)")
	out := fs.String("out", "", "OCI image layout directory to write (must not exist)")
	tarOut := fs.String("tar", "", "also write the layout as this tar file")
	tag := fs.String("tag", "ptcd:dev", "the image's reference name in the layout")
	version := fs.String("version", "dev", "ptcd's version, for the labels")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *binary == "" || *out == "" || *epochFlag < 0 {
		return errors.New("build needs -binary, -out and -epoch")
	}
	if _, err := os.Stat(*out); err == nil {
		return fmt.Errorf("%s exists: remove it first, a layout is written whole", *out)
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		return err
	}
	certs, err := os.ReadFile(*ca)
	if err != nil {
		return err
	}
	img, err := buildImage(bin, certs, time.Unix(*epochFlag, 0).UTC(), *version)
	if err != nil {
		return err
	}
	p, err := layout.Write(*out, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameKey: *tag})); err != nil {
		return err
	}
	if *tarOut != "" {
		if err := tarDir(*out, *tarOut, time.Unix(*epochFlag, 0).UTC()); err != nil {
			return err
		}
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Println(d.String())
	return nil
}

// tarDir writes dir as a tar with sorted names and fixed times (an OCI
// layout in one file, as `skopeo copy oci-archive:` and `podman load` read).
func tarDir(dir, file string, epoch time.Time) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch, Mode: 0o644, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(body)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
