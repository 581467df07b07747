package tsdecl

import "testing"

// BenchmarkGenerate50Tools measures declarations for 50 tools with input
// and output schemas.
func BenchmarkGenerate50Tools(b *testing.B) {
	defs := manyTools(50)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(defs, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
