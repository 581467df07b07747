package js

import (
	"slices"
	"testing"

	"github.com/dop251/goja"
)

// TestValueBuiltinsWatchedNames: code that reads no property by key gets
// hold of a built-in function only through a name, and the only built-in
// methods a bare name reaches are Object.prototype's, which the global
// object inherits. Each of them must call for groupValues.
func TestValueBuiltinsWatchedNames(t *testing.T) {
	vm := goja.New()
	global := vm.GlobalObject()
	object := vm.Get("Object").ToObject(vm)
	proto := object.Get("prototype").ToObject(vm)
	if global.Prototype() != proto {
		t.Fatal("the global object does not inherit from Object.prototype alone")
	}
	if proto.Prototype() != nil {
		t.Fatal("Object.prototype has a prototype")
	}
	var watchedValues []string
	for _, w := range watchedNames {
		if w.group&groupValues != 0 && w.group != groupAll {
			watchedValues = append(watchedValues, w.name)
		}
	}
	for _, key := range proto.GetOwnPropertyNames() {
		if !slices.Contains(watchedValues, key) {
			t.Errorf("Object.prototype.%s is reachable by its bare name but does not call for groupValues", key)
		}
	}
	syms, _ := vm.RunString("Object.getOwnPropertySymbols(Object.prototype).length")
	if syms.ToInteger() != 0 {
		t.Error("Object.prototype has symbol keys")
	}
}

// TestValueBuiltinsGroups: which code has the built-ins reachable from
// values counted.
func TestValueBuiltinsGroups(t *testing.T) {
	cases := []struct {
		src  string
		want bool
	}{
		{"return {ok: 1}", false},
		{"const a = 1 + 2; return `${a}`", false},
		{"return await tools", false},
		{"return input.x", true},
		{"return [1]", true},
		{"const {join} = []; return 1", true},
		{"return {toString: toLocaleString}", true},
		{"return valueOf", true},
		{"return this", true},
		{"return globalThis", true},
		{"return \\u0074oString", true},
	}
	for _, c := range cases {
		g, _, err := scan(c.src)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		if got := g&groupValues != 0; got != c.want {
			t.Errorf("%q: groupValues %v, want %v", c.src, got, c.want)
		}
	}
}
