// want: {"len":5,"upper":"HELLO","n":7,"ok":true}
const raw: unknown = "hello";
const s = raw as string;
const n = <number>(<unknown>7);
const el = ({ ok: true } satisfies { ok: boolean });
const maybe: string | null = s;
return { len: s.length, upper: maybe!.toUpperCase(), n, ok: el.ok };
