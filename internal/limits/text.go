package limits

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Format writes a value of the field in its unit: "1.5s" for a duration,
// "64MiB" for a byte size with an exact binary unit (else the integer), the
// integer for a count.
func (f Field) Format(v int64) string {
	switch f.Unit {
	case Duration:
		return time.Duration(v).String()
	case Bytes:
		return FormatBytes(v)
	}
	return strconv.FormatInt(v, 10)
}

// Parse reads a value of the field from text: a Go duration ("1.5s", or 0)
// for a duration, an integer or a size with a unit ("64MiB", "1GB") for a
// byte size, an integer for a count. Negative values parse; Check refuses
// them.
func (f Field) Parse(s string) (int64, error) {
	s = strings.TrimSpace(s)
	var v int64
	var err error
	switch f.Unit {
	case Duration:
		if s == "0" {
			return 0, nil
		}
		var d time.Duration
		d, err = time.ParseDuration(s)
		if _, nerr := strconv.ParseFloat(s, 64); err != nil && nerr == nil {
			return 0, fmt.Errorf("%s: duration %q has no unit: write e.g. \"%ss\" or \"%sm\"", f.Name, s, s, s)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: duration %q is invalid: write e.g. \"30s\" or \"5m\"", f.Name, s)
		}
		v = int64(d)
	case Bytes:
		if v, err = ParseBytes(s); err != nil {
			return 0, fmt.Errorf("%s: %w", f.Name, err)
		}
	default:
		if v, err = strconv.ParseInt(s, 10, 64); err != nil {
			return 0, fmt.Errorf("%s: %q is not an integer", f.Name, s)
		}
	}
	if v > f.Max || v < -f.Max {
		return 0, fmt.Errorf("%s: %q is too large (at most %s)", f.Name, s, f.Format(f.Max))
	}
	return v, nil
}

var units = []struct {
	suffix string
	mult   int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

// ParseBytes reads a byte size: an integer, or a number with a unit —
// "64KiB", "256MiB", "2GiB" (powers of 1024) or "1KB", "1MB", "1GB"
// (powers of 1000).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult, num := int64(1), s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			mult, num = u.mult, strings.TrimSpace(strings.TrimSuffix(s, u.suffix))
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("size %q is invalid: write an integer or e.g. \"64MiB\"", s)
	}
	if n != 0 && (n > math.MaxInt64/mult || n < math.MinInt64/mult) {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// FormatBytes writes a byte size with the largest exact binary unit
// ("64MiB"), or as an integer.
func FormatBytes(n int64) string {
	if n != 0 {
		for _, u := range units[:4] {
			if n%u.mult == 0 {
				return strconv.FormatInt(n/u.mult, 10) + u.suffix
			}
		}
	}
	return strconv.FormatInt(n, 10)
}

// Values returns every field of l in table order, in its unit
// (nanoseconds, bytes, counts): the compact form of the worker frames,
// whose both ends share the table.
func (l Limits) Values() []int64 {
	out := make([]int64, len(table))
	for i := range table {
		out[i] = table[i].get(&l)
	}
	return out
}

// FromValues is the inverse of Values. Values of another length than the
// table, or out of their field's range (negative included), are an error.
func FromValues(vs []int64) (Limits, error) {
	var l Limits
	if len(vs) != len(table) {
		return l, fmt.Errorf("%d limits, want %d", len(vs), len(table))
	}
	for i := range table {
		f := &table[i]
		if v := vs[i]; v > f.Max || v < 0 {
			return Limits{}, fmt.Errorf("limit %s is out of range (%d)", f.Name, v)
		} else {
			f.set(&l, v)
		}
	}
	return l, nil
}

// MarshalJSON writes the set fields as an object in table order: durations
// as strings ("5s"), byte sizes and counts as integers.
func (l Limits) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, f := range table {
		v := f.get(&l)
		if v == 0 {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(strconv.Quote(f.Name))
		b.WriteByte(':')
		if f.Unit == Duration {
			b.WriteString(strconv.Quote(f.Format(v)))
		} else {
			b.WriteString(strconv.FormatInt(v, 10))
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object of fields by name; each value is a number
// or a string in the field's text form (see Field.Parse). Unknown names are
// errors.
func (l *Limits) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("limits: %v", err)
	}
	raw := make(map[string]any, len(m))
	for k, v := range m {
		var x any
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if err := d.Decode(&x); err != nil {
			return fmt.Errorf("limits.%s: %v", k, err)
		}
		raw[k] = x
	}
	return l.fromAny(raw)
}

// MarshalYAML writes every field, in table order, in its text form:
// durations and byte sizes as strings ("30s", "64MiB"), counts as integers.
func (l Limits) MarshalYAML() (any, error) {
	v := reflect.New(yamlForm()).Elem()
	for i, f := range table {
		x := f.get(&l)
		if f.Unit == Count {
			v.Field(i).Set(reflect.ValueOf(x))
		} else {
			v.Field(i).Set(reflect.ValueOf(f.Format(x)))
		}
	}
	return v.Interface(), nil
}

// yamlForm is a struct type with one field per row of the table, tagged
// with its name, so that an encoder writes the fields in table order. It
// is built once, from the table; printing a configuration is its only use.
var yamlForm = sync.OnceValue(func() reflect.Type {
	fields := make([]reflect.StructField, len(table))
	for i, f := range table {
		fields[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: reflect.TypeFor[any](),
			Tag: reflect.StructTag(`yaml:"` + f.Name + `" json:"` + f.Name + `"`)}
	}
	return reflect.StructOf(fields)
})

// UnmarshalYAML reads a mapping of fields by name (see UnmarshalJSON).
func (l *Limits) UnmarshalYAML(unmarshal func(any) error) error {
	var m map[string]any
	if err := unmarshal(&m); err != nil {
		return err
	}
	return l.fromAny(m)
}

// fromAny sets the fields named in m over l.
func (l *Limits) fromAny(m map[string]any) error {
	for name, x := range m {
		f, ok := FieldByName(name)
		if !ok {
			return fmt.Errorf("unknown field %q in limits: use %s", name, names())
		}
		v, err := f.value(x)
		if err != nil {
			return fmt.Errorf("limits.%w", err)
		}
		f.set(l, v)
	}
	return nil
}

// Decode converts a decoded JSON or YAML scalar (a number, a string in
// the field's text form, or nil for zero) to the field's value. Its errors
// say what is wrong with the value; they do not repeat the field's name.
func (f Field) Decode(x any) (int64, error) {
	v, err := f.value(x)
	if err != nil {
		return 0, errors.New(strings.TrimPrefix(err.Error(), f.Name+": "))
	}
	return v, nil
}

// value converts a decoded JSON or YAML scalar.
func (f Field) value(x any) (int64, error) {
	switch x := x.(type) {
	case nil:
		return 0, nil
	case string:
		return f.Parse(x)
	case json.Number:
		return f.Parse(x.String())
	case int, int64, uint64, int32, uint32, float64:
		s := fmt.Sprint(x)
		if f.Unit == Duration && s != "0" {
			return 0, fmt.Errorf("%s: duration %s has no unit: write e.g. \"%ss\" or \"%sm\"", f.Name, s, s, s)
		}
		return f.Parse(s)
	}
	return 0, fmt.Errorf("%s: %v is not a %s", f.Name, x, f.Unit)
}

// String names the unit.
func (u Unit) String() string {
	switch u {
	case Duration:
		return "duration"
	case Bytes:
		return "byte size"
	case Count:
		return "count"
	}
	return "unit(" + strconv.Itoa(int(u)) + ")"
}

func names() string {
	s := make([]string, len(table))
	for i, f := range table {
		s[i] = f.Name
	}
	return strings.Join(s, ", ")
}

// Value adapts one field of a Limits to flag.Value, for config keys,
// environment variables and command-line flags.
type Value struct {
	L     *Limits
	Field Field
}

// Set parses s into the field; it implements flag.Value.
func (v Value) Set(s string) error {
	n, err := v.Field.Parse(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), v.Field.Name+": "))
	}
	v.Field.set(v.L, n)
	return nil
}

// String formats the field; it implements flag.Value.
func (v Value) String() string {
	if v.L == nil {
		return "0"
	}
	return v.Field.Format(v.Field.get(v.L))
}
