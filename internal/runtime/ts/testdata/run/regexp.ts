// want: {"named":"2024-05","dotAll":true,"lookbehind":"42","indices":"unsupported"}
const m = /(?<year>\d{4})-\d{2}/.exec("2024-05");
let indices: string;
try {
  indices = String(/a/d.exec("a"));
} catch (e) {
  indices = "unsupported";
}
return {
  named: m?.[0],
  dotAll: /a.b/s.test("a\nb"),
  lookbehind: "$42".match(/(?<=\$)\d+/)?.[0],
  indices,
};
