package config

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ptcrun/ptc/internal/limits"
)

// Duration is a time.Duration written as a Go duration string ("30s",
// "1m30s") in the file, the environment and flags.
type Duration time.Duration

// UnmarshalYAML reads a duration string (or 0).
func (d *Duration) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	switch v := v.(type) {
	case string:
		return d.Set(v)
	case uint64:
		if v == 0 {
			*d = 0
			return nil
		}
	case int64:
		if v == 0 {
			*d = 0
			return nil
		}
	case nil:
		*d = 0
		return nil
	}
	return fmt.Errorf("duration %v needs a unit: write e.g. \"30s\" or \"5m\"", v)
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Set parses a Go duration string; it implements flag.Value.
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("duration %q is invalid: write e.g. \"30s\" or \"5m\"", s)
	}
	*d = Duration(v)
	return nil
}

// String formats the duration; it implements flag.Value.
func (d Duration) String() string { return time.Duration(d).String() }

// ByteSize is a number of bytes, written as an integer or with a unit:
// "64KiB", "256MiB", "2GiB" (powers of 1024) or "1KB", "1MB", "1GB"
// (powers of 1000).
type ByteSize int64

// UnmarshalYAML reads an integer or a size string.
func (b *ByteSize) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	switch v := v.(type) {
	case string:
		return b.Set(v)
	case uint64:
		if v > math.MaxInt64 {
			return fmt.Errorf("size %d is too large", v)
		}
		*b = ByteSize(v)
		return nil
	case int64:
		*b = ByteSize(v)
		return nil
	case nil:
		*b = 0
		return nil
	}
	return fmt.Errorf("size %v is invalid: write an integer or e.g. \"64MiB\"", v)
}

// MarshalYAML writes the size with the largest exact binary unit.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

// Set parses an integer or a size with a unit (limits.ParseBytes); it
// implements flag.Value.
func (b *ByteSize) Set(s string) error {
	n, err := limits.ParseBytes(s)
	if err != nil {
		return err
	}
	*b = ByteSize(n)
	return nil
}

// String formats the size with the largest exact binary unit; it
// implements flag.Value.
func (b ByteSize) String() string { return limits.FormatBytes(int64(b)) }
