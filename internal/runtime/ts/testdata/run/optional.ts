// want: {"city":"Oslo","none":null,"zip":"0001","called":"hi","count":5,"flag":"default"}
interface Addr { city?: string; zip?: string }
interface User { addr?: Addr; greet?: () => string }
const u: User = { addr: { city: "Oslo" }, greet: () => "hi" };
const v: User = {};
let count: number | undefined;
count ??= 5;
let flag: string | null = null;
flag ||= "default";
return {
  city: u.addr?.city,
  none: v.addr?.city ?? null,
  zip: u.addr?.zip ?? "0001",
  called: u.greet?.() ?? "none",
  count,
  flag,
};
