package ptc

import (
	"reflect"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
)

// requestNeeds names the fields a Request field takes effect only with.
var requestNeeds = map[string]func(*Request){
	"ProgressValues": func(r *Request) { r.OnProgress = func(ProgressEvent) {} },
}

// nonZero sets v, a zero value, to some other value of its type.
func nonZero(t *testing.T, v reflect.Value) {
	t.Helper()
	switch {
	case v.Type() == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(time.Unix(100, 0)))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		if s.Index(0).Kind() == reflect.Uint8 {
			s.Index(0).SetUint('1')
		}
		v.Set(s)
	case reflect.Func:
		v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, v.Type().NumOut())
			for i := range out {
				out[i] = reflect.Zero(v.Type().Out(i))
			}
			return out
		}))
	case reflect.Struct:
		nonZero(t, v.Field(0))
	default:
		t.Fatalf("no non-zero value for a %s", v.Type())
	}
}

// withoutFuncs clears the callbacks of a core request, which DeepEqual
// never finds equal.
func withoutFuncs(c core.Request) core.Request {
	c.OnLog, c.Observer, c.Approve = nil, nil, nil
	return c
}

// TestEveryRequestFieldReachesCore: each field of the public Request
// changes the core request it converts to, so none is silently dropped on
// the way to a Runner or (through internal/wire, whose own test checks
// the rest of the way) a Client's server.
func TestEveryRequestFieldReachesCore(t *testing.T) {
	rt := reflect.TypeOf(Request{})
	for i := range rt.NumField() {
		f := rt.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			var base Request
			if need := requestNeeds[f.Name]; need != nil {
				need(&base)
			}
			r := base
			nonZero(t, reflect.ValueOf(&r).Elem().Field(i))
			before, after := requestCore(base), requestCore(r)
			if f.Type.Kind() == reflect.Func {
				// A callback becomes one of the core request's callbacks.
				if after.OnLog == nil && after.Observer == nil && after.Approve == nil {
					t.Fatalf("Request.%s does not reach the core request", f.Name)
				}
				return
			}
			if reflect.DeepEqual(withoutFuncs(before), withoutFuncs(after)) {
				t.Fatalf("Request.%s does not reach the core request", f.Name)
			}
		})
	}
}
