package main

import (
	"archive/tar"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// firstImage reads the one image of an OCI layout written by build.
func firstImage(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d manifests: want the one image build writes", dir, len(m.Manifests))
	}
	return idx.Image(m.Manifests[0].Digest)
}

func unpackCmd(args []string) error {
	fs := flag.NewFlagSet("unpack", flag.ContinueOnError)
	dir := fs.String("layout", "", "OCI image layout directory")
	rootfs := fs.String("rootfs", "", "directory to unpack the image's file system into (must not exist)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *rootfs == "" {
		return errors.New("unpack needs -layout and -rootfs")
	}
	img, err := firstImage(*dir)
	if err != nil {
		return err
	}
	if err := os.Mkdir(*rootfs, 0o755); err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	return extract(tar.NewReader(rc), *rootfs)
}

// extract writes a flattened image's regular files and directories under
// root with their modes and owners; anything else, or a name that leaves
// root, is an error (the image build writes holds neither).
func extract(tr *tar.Reader, root string) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("unsafe name %q in the image", h.Name)
		}
		target := filepath.Join(root, name)
		mode := os.FileMode(h.Mode & 0o777)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q has type %q: the image holds only files and directories", h.Name, h.Typeflag)
		}
		if err := os.Chown(target, h.Uid, h.Gid); err != nil {
			return err
		}
		if h.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		if err := os.Chmod(target, mode); err != nil {
			return err
		}
	}
}
