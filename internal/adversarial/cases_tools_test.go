package adversarial

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

func toolsCases() []tcase {
	t := func(name, src string, w want, fast bool, opts ...opt) tcase {
		return tcase{name: name, family: famTools, fast: fast, bound: 10 * time.Second,
			req: jsReq(src, append([]opt{timeout(5 * time.Second), memory(256 * MiB)}, opts...)...), want: w}
	}
	notCalled := func(v []string) error {
		if slices.Contains(v, "called") {
			return fmt.Errorf("a hostile name reached a tool: %v", v)
		}
		return nil
	}
	return []tcase{
		t("tools-proto-key", `const out = [];
for (const k of ["__proto__", "constructor", "hasOwnProperty", "toString", "valueOf", "__defineGetter__", "prototype"]) {
  try { const f = tools[k]; if (typeof f !== "function") { out.push(typeof f); continue } const r = await f.call(tools, {department: "sales"}); out.push(Array.isArray(r) ? "called" : typeof r) } catch (e) { out.push(e.name) }
}
return out`, succeeds().and(noToolCalls).and(resultIs(notCalled)), true),
		t("tools-constructor-is-plain", `const c = tools.constructor; return [c === undefined || c === Object, Object.getOwnPropertyNames(tools).includes("constructor")]`,
			succeeds(`[true,false]`), false),
		t("tools-prototype-swap", `Object.setPrototypeOf(tools, new Proxy({}, {get: (t, k) => () => "trapped:" + String(k)})); return [typeof tools.no_such_tool, await tools.get_budget_by_level({level: "junior"}).then((r) => r.level)]`,
			succeeds(`["function","junior"]`, `["undefined","junior"]`).or(ScriptError), false),
		t("tools-go-symbols", `return [String(tools.get_team_members), String(tools.get_expenses), String(tools), String(console.log), Object.prototype.toString.call(tools.get_team_members),
  tools.get_team_members.name, JSON.stringify(Object.getOwnPropertyDescriptors(tools.get_team_members)), String(Object.getPrototypeOf(tools.get_team_members))]`,
			succeeds().and(noGoSymbols), true),
		t("tools-go-symbols-errors", `try { await tools.get_expenses({member_id: "nobody", quarter: "Q3"}) } catch (e) { return [String(e), String(e.stack), Object.keys(e), e.tool, e.code] }`,
			succeeds().and(noGoSymbols), false),
		t("tools-unknown-name", `return await tools.no_such_tool({})`, fails(ScriptError).and(noToolCalls), false),
		t("tools-unknown-nested", `return await tools.a.b.c({})`, fails(ScriptError).and(noToolCalls), false),
		t("tools-not-allowed", `try { await tools.get_team_members({department: "sales"}); return "called" } catch (e) { return e.code || e.name }`,
			succeeds(`"unknown_tool"`, `"TypeError"`).and(noToolCalls), false, allowed("get_budget_by_level")),
		t("tools-search-exists", `return [typeof tools.$search, typeof tools.$describe, (await tools.$search("travel budget")).map((t) => t.name).includes("get_budget_by_level"), (await tools.$describe("get_expenses")).name]`,
			succeeds(`["function","function",true,"get_expenses"]`), true),
		t("tools-search-hostile-queries", `if (typeof tools.$search !== "function") return "missing";
const out = [];
for (const q of [undefined, null, {}, [], 1e308, -0, "x".repeat(1 << 20), "((((", "\u0000\uffff", "__proto__", {toString() { throw new Error("x") }}, new Proxy({}, {get() { throw new Error("trap") }})]) {
  try { const r = await tools.$search(q); out.push(Array.isArray(r) ? "array" : typeof r) } catch (e) { out.push(e.name) }
}
return out`, succeeds().and(resultIs(func(v []string) error {
			for _, s := range v {
				if s != "array" && s != "TypeError" && s != "RangeError" && s != "Error" && s != "ToolArgumentError" {
					return fmt.Errorf("$search answered %q", s)
				}
			}
			return nil
		})), false),
		t("tools-describe-hostile-names", `if (typeof tools.$describe !== "function") return "missing";
const out = [];
for (const n of ["__proto__", "constructor", "$search", "", "x".repeat(1 << 20), "../../etc/passwd", null, 42]) {
  try { const r = await tools.$describe(n); out.push(r == null ? "none" : typeof r === "object" && r.name === n ? "tool" : "other") } catch (e) { out.push(e.name) }
}
return out`, succeeds().and(resultIs(func(v []string) error {
			for _, s := range v {
				if s == "tool" || s == "other" {
					return fmt.Errorf("$describe described something for a hostile name: %v", v)
				}
			}
			return nil
		})), false),
		t("tools-search-query-flood", `if (typeof tools.$search !== "function") return "missing"; let n = 0; for (let i = 0; i < 2000; i++) n += (await tools.$search("budget expenses team " + i)).length; return n > 0`,
			succeeds("true"), false),
		t("tools-args-cyclic", `const a = {department: "sales"}; a.self = a; return await tools.get_team_members(a)`, fails(ScriptError).and(noToolCalls), false),
		t("tools-args-bigint-symbol-function", `const out = []; for (const v of [1n, Symbol("s"), () => 1]) { try { await tools.get_team_members({department: v}); out.push("called") } catch (e) { out.push(e.name) } } return out`,
			succeeds().and(noToolCalls).and(resultIs(notCalled)), false),
		t("tools-args-huge", `try { await tools.get_team_members({department: "x".repeat(6 << 20)}); return "called" } catch (e) { return e.name }`,
			succeeds().and(noToolCalls).and(resultIs(func(v string) error { return notCalled([]string{v}) })), false),
		t("tools-args-deep", `let a = "sales"; for (let i = 0; i < 1e5; i++) a = [a]; try { await tools.get_team_members({department: a}); return "called" } catch (e) { return e.name }`,
			succeeds().and(noToolCalls).and(resultIs(func(v string) error { return notCalled([]string{v}) })), false),
		t("tools-args-getter-reenters", `const args = {get department() { tools.get_budget_by_level({level: "junior"}); return "sales" }, level: 1};
delete args.level; const r = await tools.get_team_members(args); return r.length`, succeeds("8").or(ScriptError), false),
		t("tools-args-getter-throws", `return await tools.get_team_members({get department() { throw new Error("getter") }})`, fails(ScriptError).and(noToolCalls), false),
		t("tools-args-proxy", `return await tools.get_team_members(new Proxy({department: "sales"}, {ownKeys() { throw new Error("trap") }, get() { throw new Error("trap") }}))`,
			fails(ScriptError).and(noToolCalls), false),
		t("tools-args-proto-key", `try { await tools.get_team_members(JSON.parse('{"__proto__": {"department": "sales"}}')); return "called" } catch (e) { return e.code }`,
			succeeds(`"invalid_arguments"`).and(noToolCalls), false),
		t("tools-args-not-objects", `const out = []; for (const v of [undefined, null, 1, "sales", ["sales"], true]) { try { await tools.get_team_members(v); out.push("called") } catch (e) { out.push(e.code || e.name) } } return out`,
			succeeds().and(noToolCalls).and(resultIs(notCalled)), false),
		t("tools-called-as-constructor", `try { new tools.get_team_members({department: "sales"}); return "constructed" } catch (e) { return e.name }`,
			succeeds(`"TypeError"`, `"constructed"`), false),
		t("tools-called-with-this", `return (await tools.get_team_members.call(null, {department: "sales"})).length + (await Reflect.apply(tools.get_team_members, 42, [{department: "sales"}])).length`,
			succeeds("16"), false),
		t("tools-result-mutation-isolated", `const a = await tools.get_budget_by_level({level: "junior"}); a.level = "changed"; Object.prototype.x = 1; const b = await tools.get_budget_by_level({level: "junior"}); return b.level`,
			succeeds(`"junior"`), false),
		{
			name: "allowed-tools-hostile-names", family: famTools, bound: 10 * time.Second,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				for _, name := range []string{"__proto__", "constructor", "$search", "get_team_members\x00", "*", "get_*", "", "toString", "../get_team_members", repeat("x", 1<<16)} {
					_, err := e.c.Execute(ctx, jsReq("return 1", allowed(name)))
					if status.Code(err) != codes.InvalidArgument {
						e.fail("allowed_tools [%q]: want INVALID_ARGUMENT, got %v", clip(name, 40), describe(nil, err))
					}
				}
				return nil, nil
			},
			want: checkedByDo,
		},
		{
			name: "list-tools-hostile", family: famTools, fast: true, bound: 10 * time.Second,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				for _, names := range [][]string{{"__proto__"}, {"constructor"}, {"$search"}, {""}, {"get_team_members", "nope"}} {
					if _, err := e.c.ListTools(ctx, &ptcv1.ListToolsRequest{Names: names}); status.Code(err) != codes.InvalidArgument {
						e.fail("ListTools names %q: want INVALID_ARGUMENT, got %v", names, describe(nil, err))
					}
				}
				// A huge query may be refused; a long one must work.
				if _, err := e.c.ListTools(ctx, &ptcv1.ListToolsRequest{Query: repeat("budget ((( ", 100000)}); err != nil && status.Code(err) != codes.InvalidArgument {
					e.fail("ListTools with a 1 MB query: %v", describe(nil, err))
				}
				r, err := e.c.ListTools(ctx, &ptcv1.ListToolsRequest{Query: repeat("budget ((( \u0000 ", 200), Limit: 2, IncludeTypescript: true})
				if err != nil || len(r.GetTools()) > 2 || len(r.GetMatches()) != len(r.GetTools()) {
					e.fail("ListTools with a hostile 3 KB query: %v, %d tools, %d matches", describe(nil, err), len(r.GetTools()), len(r.GetMatches()))
				}
				if _, err := e.c.ListTools(ctx, &ptcv1.ListToolsRequest{Limit: -5}); err != nil && status.Code(err) != codes.InvalidArgument {
					e.fail("ListTools limit -5: %v", describe(nil, err))
				}
				return nil, nil
			},
			want: checkedByDo,
		},
	}
}
