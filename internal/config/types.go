package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/ptcrun/ptc/internal/limits"
)

// Duration is a time.Duration written as a Go duration string ("30s",
// "1m30s") in the file, the environment and flags.
type Duration time.Duration

// UnmarshalYAML reads a duration string (or 0).
func (d *Duration) UnmarshalYAML(node ast.Node) error {
	switch x := scalar(node).(type) {
	case nil:
		*d = 0
		return nil
	case string:
		v, err := parseDuration(x)
		if err != nil {
			return &nodeError{node, err.Error()}
		}
		*d = Duration(v)
		return nil
	case uint64, int64:
		if fmt.Sprint(x) == "0" {
			*d = 0
			return nil
		}
		return &nodeError{node, fmt.Sprintf("duration %v has no unit: write e.g. \"%vs\" or \"%vm\"", x, x, x)}
	}
	return &nodeError{node, fmt.Sprintf("want %s, not %s", kindName(reflect.TypeFor[Duration]()), valueName(node))}
}

// parseDuration parses a Go duration string, with a message that says
// what to write.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	v, err := time.ParseDuration(s)
	if err == nil {
		return v, nil
	}
	if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
		return 0, fmt.Errorf("duration %q has no unit: write e.g. \"%ss\" or \"%sm\"", s, s, s)
	}
	return 0, fmt.Errorf("duration %q is invalid: write e.g. \"30s\", \"5m\" or \"1h30m\"", s)
}

// scalar returns a node's value as the decoder reads it into an any
// (string, uint64, int64, float64, bool or nil), or the node itself when
// it is not a scalar.
func scalar(node ast.Node) any {
	switch node.Type() {
	case ast.MappingType, ast.MappingValueType, ast.SequenceType, ast.AnchorType, ast.AliasType, ast.TagType:
		return node
	}
	var x any
	if err := yaml.NodeToValue(node, &x); err != nil {
		return node
	}
	return x
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Set parses a Go duration string; it implements flag.Value.
func (d *Duration) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
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
func (b *ByteSize) UnmarshalYAML(node ast.Node) error {
	switch x := scalar(node).(type) {
	case nil:
		*b = 0
		return nil
	case string:
		if err := b.Set(x); err != nil {
			return &nodeError{node, err.Error()}
		}
		return nil
	case uint64:
		if x > math.MaxInt64 {
			return &nodeError{node, fmt.Sprintf("size %d is too large", x)}
		}
		*b = ByteSize(x)
		return nil
	case int64:
		*b = ByteSize(x)
		return nil
	}
	return &nodeError{node, fmt.Sprintf("want %s, not %s", kindName(reflect.TypeFor[ByteSize]()), valueName(node))}
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

// LimitValues is one side of the limits section, or a tenant's ceilings:
// a limits.Limits written field by field as the limits table names them
// (durations such as "30s", byte sizes such as "64MiB", counts).
type LimitValues limits.Limits

// UnmarshalYAML reads a mapping of limits by name. An unknown name or a
// bad value is an error at its key or value.
func (l *LimitValues) UnmarshalYAML(node ast.Node) error {
	if node.Type() == ast.NullType {
		return nil
	}
	m, ok := node.(ast.MapNode)
	if !ok {
		return &nodeError{node, fmt.Sprintf("want a mapping of limits (timeout: 30s, ...), not %s", valueName(node))}
	}
	var names []string
	for _, f := range limits.Fields() {
		names = append(names, f.Name)
	}
	seen := map[string]bool{}
	for it := m.MapRange(); it.Next(); {
		name := it.Key().GetToken().Value
		f, ok := limits.FieldByName(name)
		if !ok {
			return &nodeError{it.Key(), unknownKey(name, names)}
		}
		if seen[name] {
			return &nodeError{it.Key(), "the key is set twice: keep one"}
		}
		seen[name] = true
		x := scalar(it.Value())
		if _, isNode := x.(ast.Node); isNode {
			return &nodeError{it.Value(), fmt.Sprintf("want a %s, not %s", f.Unit, valueName(it.Value()))}
		}
		v, err := f.Decode(x)
		if err != nil {
			return &nodeError{it.Value(), err.Error()}
		}
		f.Set((*limits.Limits)(l), v)
	}
	return nil
}

// MarshalYAML writes every field in its text form (see limits.Limits).
func (l LimitValues) MarshalYAML() (any, error) { return limits.Limits(l).MarshalYAML() }

// IsZero reports whether no field is set.
func (l LimitValues) IsZero() bool { return limits.Limits(l).IsZero() }
