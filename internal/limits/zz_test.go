package limits

import "testing"

func BenchmarkResolve(b *testing.B) {
	p := DefaultPolicy()
	req := Limits{Timeout: 5}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = req.Check()
		_ = p.Resolve(req, Limits{})
	}
}
