//go:build !linux

package hostprobe

import "errors"

// Watch reports the opens and reads of files in one directory; it needs
// inotify (Linux).
type Watch struct{}

// NewWatch fails: there is no inotify here.
func NewWatch(string) (*Watch, error) { return nil, errors.New("hostprobe: inotify needs Linux") }

// Events returns nothing.
func (*Watch) Events() ([]string, error) { return nil, nil }

// Close does nothing.
func (*Watch) Close() error { return nil }
