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

// TestSizeGuardsGroups: which code has the size guards of the built-ins
// reachable from values installed (groupSizes). Code without it reads no
// property and names no source of arrays: it cannot reach those
// built-ins, not even through an array converted to a string. The
// sources without Access are those TestSizeGuardsWithoutAccess runs.
func TestSizeGuardsGroups(t *testing.T) {
	cases := []struct {
		src          string
		access, want bool
	}{
		{"return {ok: 1}", false, false},
		{"const a = 1 + 2; return `${a}`", false, false},
		{"let s = 'ab'; for (let i = 0; i < 3; i++) s += s; return s", false, false},
		{"return await tools", false, true},
		{"return '' + input", false, true},
		{"try { return '' + Array(2 ** 32 - 1) } catch (e) { return '' + e }", false, true},
		{"try { return `${Array(2 ** 28)}` } catch (e) { return '' + e }", false, true},
		{"try { return String(Array(2 ** 32 - 1)) } catch (e) { return '' + e }", false, true},
		{"return Object", false, true},
		{"return Function", false, true},
		{"return input.x", true, true},
		{"return [1]", true, true},
		{"const {join} = []; return 1", true, true},
		{"return {toString: toLocaleString}", false, true},
		{"return this", false, true},
		{"return \\u0041rray", false, true},
	}
	for _, c := range cases {
		g, info, err := scan(c.src)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		if info.Access != c.access {
			t.Errorf("%q: Access %v, want %v", c.src, info.Access, c.access)
		}
		if got := g&groupSizes != 0; got != c.want {
			t.Errorf("%q: groupSizes %v, want %v", c.src, got, c.want)
		}
	}
}

// TestInstallValuesBringsSizes: the counting stand-ins of groupValues are
// installed over the size guards, never under them.
func TestInstallValuesBringsSizes(t *testing.T) {
	e := New()
	newExec(e).newRuntime() // the first learns the built-ins' keys with groupValues
	x := newExec(e)
	x.newRuntime()
	if x.installed&groupSizes != 0 {
		t.Fatal("a fresh runtime has the size guards before any program asked for them")
	}
	x.install(groupValues)
	if x.installed&groupSizes == 0 {
		t.Fatal("groupValues was installed without groupSizes")
	}
}
