package js

import (
	"context"
	"testing"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
)

// TestProgramsWithoutGroups: code that reads no property and names no
// watched global (scan finds no group)
// runs in a runtime without groupBase, the recursion and Function
// constructors' guards, and still runs as JavaScript: generators, tagged
// templates, functions converted to strings, instanceof, classes, errors,
// async functions. It runs as an Engine's later execution, as most do (the
// first counts every built-in, lazy.go).
func TestProgramsWithoutGroups(t *testing.T) {
	e := New()
	lim := limits.DefaultPolicy().Resolve(limits.Limits{}, limits.Limits{})
	runIn := func(x *exec, src string) *runtime.Outcome {
		c := e.compile(Source{Code: src})
		if c.syntaxEr != nil {
			t.Fatalf("%s: %v", src, c.syntaxEr)
		}
		x.attach(context.Background(), testJob(src, lim), c, nil)
		return x.run()
	}
	if out := runIn(newExec(e), `return 1`); out.Err != nil {
		t.Fatal(out.Err)
	}
	cases := []struct{ src, want string }{
		{"return {ok: 1}", `{"ok":1}`},
		{"function* g() { yield 1; yield 2 } let s = 0; for (const v of g()) s += v; return s", `3`},
		{"function tag(s, v) { return `${s}|${v}` } return tag`a${1}b`", `"a,b|1"`},
		{"const f = (a) => a + 1; return `${f}`", `"(a) => a + 1"`},
		{"class A {} class B extends A {} return new B() instanceof A", `true`},
		{"try { nope } catch (e) { return `${e}` }", `"ReferenceError: nope is not defined"`},
		{"const f = async (v) => v * 2; return await f(21)", `42`},
		{"let s = ''; for (let i = 0; i < 3; i++) s += s + i; return s", `"0010012"`},
	}
	for _, c := range cases {
		g, _, err := scan(bodyPrefix + c.src + bodySuffix)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if g != 0 {
			t.Fatalf("%s: scan finds groups %b; the case wants code without any", c.src, g)
		}
		x := newExec(e)
		out := runIn(x, c.src)
		if out.Err != nil {
			t.Fatalf("%s: %v", c.src, out.Err)
		}
		if string(out.Result) != c.want {
			t.Errorf("%s = %s, want %s", c.src, out.Result, c.want)
		}
		if x.installed != 0 {
			t.Errorf("%s: groups %b installed, want none", c.src, x.installed)
		}
	}
}

// TestAnyGroupBringsBase: the guards every program that reaches a
// built-in needs come with any group, before the group's own, in a
// runtime made ahead with none.
func TestAnyGroupBringsBase(t *testing.T) {
	e := New()
	newExec(e).newRuntime() // the first counts every built-in
	for g := group(1); g < groupBase; g <<= 1 {
		x, err := e.prepare(0)
		if err != nil {
			t.Fatal(err)
		}
		if x.installed != 0 {
			t.Fatalf("a runtime made ahead for no group has %b", x.installed)
		}
		x.install(g)
		if x.installed&groupBase == 0 {
			t.Errorf("group %b installed without groupBase", g)
		}
		if len(x.wrappers) == 0 || x.hasInstance == nil || x.rawIsArray == nil || x.rawRangeError == nil {
			t.Errorf("group %b: the base guards or the intrinsics they use are missing", g)
		}
	}
}
