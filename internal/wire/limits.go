package wire

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ptcrun/ptc/internal/limits"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// limitField pairs a row of the limits table with its ptc.v1.Limits field
// of the same name.
type limitField struct {
	limits.Field
	fd protoreflect.FieldDescriptor
}

// limitFields is the limits table over the ptc.v1.Limits descriptor. A row
// without a proto field of its name is left out (TestLimitsMatchProto
// fails on it).
var limitFields = func() []limitField {
	fds := (&ptcv1.Limits{}).ProtoReflect().Descriptor().Fields()
	var out []limitField
	for _, f := range limits.Fields() {
		if fd := fds.ByName(protoreflect.Name(f.Name)); fd != nil {
			out = append(out, limitField{f, fd})
		}
	}
	return out
}()

// LimitsFromPB converts requested limits (nil means all defaults). It
// refuses only what cannot be converted (an invalid duration); Prepare
// validates the values.
func LimitsFromPB(l *ptcv1.Limits) (limits.Limits, error) {
	var out limits.Limits
	if l == nil {
		return out, nil
	}
	m := l.ProtoReflect()
	for _, f := range limitFields {
		if !m.Has(f.fd) {
			continue
		}
		v := m.Get(f.fd)
		switch f.fd.Kind() {
		case protoreflect.MessageKind:
			d, ok := v.Message().Interface().(*durationpb.Duration)
			if !ok {
				return out, fmt.Errorf("limits.%s: not a duration", f.Name)
			}
			if err := d.CheckValid(); err != nil {
				return out, fmt.Errorf("limits.%s: %v", f.Name, err)
			}
			f.Set(&out, int64(d.AsDuration()))
		case protoreflect.Int32Kind, protoreflect.Int64Kind:
			f.Set(&out, v.Int())
		}
	}
	return out, nil
}

// LimitsPB converts limits; zero fields stay unset.
func LimitsPB(l limits.Limits) *ptcv1.Limits {
	out := &ptcv1.Limits{}
	m := out.ProtoReflect()
	for _, f := range limitFields {
		v := f.Get(l)
		if v == 0 {
			continue
		}
		switch f.fd.Kind() {
		case protoreflect.MessageKind:
			m.Set(f.fd, protoreflect.ValueOfMessage(durationpb.New(time.Duration(v)).ProtoReflect()))
		case protoreflect.Int32Kind:
			m.Set(f.fd, protoreflect.ValueOfInt32(int32(v)))
		case protoreflect.Int64Kind:
			m.Set(f.fd, protoreflect.ValueOfInt64(v))
		}
	}
	return out
}
