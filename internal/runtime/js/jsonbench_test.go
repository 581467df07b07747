package js_test

import "testing"

// jsonBenchData builds 2,000 objects of five properties (about 150 KB of
// JSON) before the measured part of each script.
const jsonBenchData = `const rows = Array.from({length: 2000}, (_, i) => ({id: i, name: "member " + i, dept: "sales", amount: i * 1.5, tags: ["a", "b"]}));`

// BenchmarkJSONStringify measures JSON.stringify of 2,000 small objects,
// ten times per execution.
func BenchmarkJSONStringify(b *testing.B) {
	benchScript(b, jsonBenchData+`let n = 0; for (let i = 0; i < 10; i++) n += JSON.stringify(rows).length; return n`)
}

// BenchmarkJSONParse measures JSON.parse of the same text, ten times per
// execution.
func BenchmarkJSONParse(b *testing.B) {
	benchScript(b, jsonBenchData+`const s = JSON.stringify(rows); let n = 0; for (let i = 0; i < 10; i++) n += JSON.parse(s).length; return n`)
}

// BenchmarkJSONResult measures returning the 2,000 objects as the result.
func BenchmarkJSONResult(b *testing.B) {
	benchScript(b, jsonBenchData+`return rows`)
}

func benchScript(b *testing.B, src string) {
	run := benchJob(b, src)
	b.ReportAllocs()
	for b.Loop() {
		if out := run(); out.Err != nil {
			b.Fatal(out.Err)
		}
	}
}

// BenchmarkJSONNumbers measures JSON.stringify of an array of 100,000
// numbers, ten times per execution: the cost of visiting one element.
func BenchmarkJSONNumbers(b *testing.B) {
	benchScript(b, `const a = Array.from({length: 100000}, (_, i) => i); let n = 0; for (let i = 0; i < 10; i++) n += JSON.stringify(a).length; return n`)
}
