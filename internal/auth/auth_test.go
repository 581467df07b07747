package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/limits"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const tokenA = "token-of-tenant-a-0123456789"

func tenants() []Tenant {
	return []Tenant{
		{Name: "a", TokenHashes: []string{HashToken(tokenA)}, Tools: []string{"crm.*", "get_team_members"}},
		{Name: "b", ClientIdentities: []string{"harness-b", "spiffe://example.org/b"}},
	}
}

func TestHashToken(t *testing.T) {
	h := HashToken("  secret\n")
	if h != HashToken("secret") || !strings.HasPrefix(h, HashPrefix) || len(h) != len(HashPrefix)+64 {
		t.Fatalf("hash %q", h)
	}
	if _, err := ParseHash(h); err != nil {
		t.Fatal(err)
	}
}

func TestParseHash(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"valid", HashToken("x"), ""},
		{"no prefix", strings.TrimPrefix(HashToken("x"), HashPrefix), "must start with"},
		{"plain token", "my-secret-token", "never the token"},
		{"short", HashPrefix + "abcd", "64 hex digits"},
		{"not hex", HashPrefix + strings.Repeat("z", 64), "hex digit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHash(tc.in)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	cases := []struct {
		name    string
		tenants []Tenant
		want    string
	}{
		{"no name", []Tenant{{}}, "name is required"},
		{"duplicate name", []Tenant{{Name: "a"}, {Name: "a"}}, "used twice"},
		{"bad hash", []Tenant{{Name: "a", TokenHashes: []string{"plaintext"}}}, "tenant a"},
		{"shared token", []Tenant{{Name: "a", TokenHashes: []string{HashToken("t")}}, {Name: "b", TokenHashes: []string{HashToken("t")}}}, "also a token of tenant a"},
		{"shared identity", []Tenant{{Name: "a", ClientIdentities: []string{"x"}}, {Name: "b", ClientIdentities: []string{"x"}}}, "also one of tenant a"},
		{"empty identity", []Tenant{{Name: "a", ClientIdentities: []string{""}}}, "empty entry"},
		{"bad glob", []Tenant{{Name: "a", Tools: []string{"crm.["}}}, "malformed"},
		{"negative rate", []Tenant{{Name: "a", Rate: -1}}, "negative"},
		{"negative ceiling", []Tenant{{Name: "a", Ceilings: limits.Limits{Timeout: -1}}}, "ceilings"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(true, tc.tenants)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func withToken(v ...string) context.Context {
	md := metadata.MD{}
	for _, s := range v {
		md.Append("authorization", s)
	}
	return metadata.NewIncomingContext(context.Background(), md)
}

func withCert(ctx context.Context, cn string, uris ...string) context.Context {
	c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	for _, u := range uris {
		pu, _ := url.Parse(u)
		c.URIs = append(c.URIs, pu)
	}
	return peer.NewContext(ctx, &peer.Peer{AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{c}}}}})
}

func TestAuthenticate(t *testing.T) {
	a, err := New(true, tenants())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		ctx    context.Context
		tenant string
		code   codes.Code
		msg    string
	}{
		{"no credentials", context.Background(), "", codes.Unauthenticated, "credentials are missing"},
		{"good token", withToken("Bearer " + tokenA), "a", codes.OK, ""},
		{"scheme case", withToken("bearer  " + tokenA + " "), "a", codes.OK, ""},
		{"bad token", withToken("Bearer nope"), "", codes.Unauthenticated, "not valid"},
		{"basic scheme", withToken("Basic abc"), "", codes.Unauthenticated, "Bearer <token>"},
		{"empty token", withToken("Bearer "), "", codes.Unauthenticated, "must be"},
		{"two headers", withToken("Bearer "+tokenA, "Bearer "+tokenA), "", codes.Unauthenticated, "one authorization"},
		{"huge header", withToken("Bearer " + strings.Repeat("x", MaxTokenBytes+1)), "", codes.Unauthenticated, "longer"},
		{"cert common name", withCert(context.Background(), "harness-b"), "b", codes.OK, ""},
		{"cert uri san", withCert(context.Background(), "other", "spiffe://example.org/b"), "b", codes.OK, ""},
		{"unknown cert", withCert(context.Background(), "stranger"), "", codes.Unauthenticated, "belongs to no tenant"},
		{"token wins over cert", withCert(withToken("Bearer "+tokenA), "harness-b"), "a", codes.OK, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, err := a.Authenticate(tc.ctx)
			if status.Code(err) != tc.code || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("err = %v, want %v %q", err, tc.code, tc.msg)
			}
			if err != nil {
				return
			}
			tn, ok := FromContext(ctx)
			if !ok || tn.Name != tc.tenant {
				t.Fatalf("tenant %+v", tn)
			}
		})
	}
}

func TestAuthenticateDisabled(t *testing.T) {
	a, err := New(false, tenants())
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := a.Authenticate(context.Background())
	tn, ok := FromContext(ctx)
	if err != nil || !ok || tn.Name != "anonymous" || tn.RestrictsTools() || a.Enabled() {
		t.Fatal(err, tn)
	}
}

func TestAllowsTool(t *testing.T) {
	tn := tenants()[0]
	cases := []struct {
		tool string
		want bool
	}{
		{"crm.search", true}, {"get_team_members", true}, {"crm", false}, {"crm.a.b", true}, {"billing.x", false},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			if got := tn.AllowsTool(tc.tool); got != tc.want {
				t.Fatalf("AllowsTool(%q) = %v", tc.tool, got)
			}
		})
	}
	if !(&Tenant{}).AllowsTool("anything") {
		t.Fatal("an empty tool set must allow every tool")
	}
}

func TestPolicy(t *testing.T) {
	tn := Tenant{Ceilings: limits.Limits{Timeout: time.Second, MaxToolCalls: 5}}
	p := limits.DefaultPolicy()
	cases := []struct {
		name string
		req  limits.Limits
		want limits.Limits
	}{
		{"unset takes the capped default", limits.Limits{}, limits.Limits{Timeout: time.Second, MaxToolCalls: 5}},
		{"above the tenant ceiling is clamped", limits.Limits{Timeout: time.Hour, MaxToolCalls: 100}, limits.Limits{Timeout: time.Second, MaxToolCalls: 5}},
		{"below is kept", limits.Limits{Timeout: time.Millisecond, MaxToolCalls: 2}, limits.Limits{Timeout: time.Millisecond, MaxToolCalls: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := p.Resolve(tc.req, tn.Ceilings)
			if got.Timeout != tc.want.Timeout || got.MaxToolCalls != tc.want.MaxToolCalls {
				t.Fatalf("got %+v", got)
			}
			// Fields the tenant does not cap keep the server's values.
			if got.MemoryBytes != limits.Defaults().MemoryBytes {
				t.Fatalf("memory %d", got.MemoryBytes)
			}
		})
	}
}

func TestRateLimiter(t *testing.T) {
	a, err := New(true, []Tenant{
		{Name: "slow", TokenHashes: []string{HashToken("s")}, Rate: 0.001, Burst: 1},
		{Name: "free", TokenHashes: []string{HashToken("f")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rl := NewRateLimiter(a)
	slow, _ := a.Authenticate(withToken("Bearer s"))
	free, _ := a.Authenticate(withToken("Bearer f"))
	if err := rl.Limit(slow); err != nil {
		t.Fatal(err)
	}
	err = rl.Limit(slow)
	var re *RateError
	if !errors.As(err, &re) || re.Tenant != "slow" || re.RetryAfter <= 0 || !strings.Contains(err.Error(), "retry after") {
		t.Fatalf("err = %v", err)
	}
	for range 10 {
		if err := rl.Limit(free); err != nil {
			t.Fatal(err)
		}
	}
	if err := rl.Limit(context.Background()); err != nil {
		t.Fatal("a context without tenant is not limited here (auth refuses it)")
	}
}

func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer", "Basic x", "Bearer  ", "", "Bearer \x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseBearer(s)
		if err == nil && (tok == "" || len(tok) > MaxTokenBytes+1) {
			t.Fatalf("ParseBearer(%q) = %q", s, tok)
		}
	})
}

func FuzzParseHash(f *testing.F) {
	f.Add(HashToken("x"))
	f.Add("sha256:")
	f.Add("sha256:" + strings.Repeat("g", 64))
	f.Fuzz(func(t *testing.T, s string) {
		sum, err := ParseHash(s)
		if err == nil && HashPrefix+strings.ToLower(s[len(HashPrefix):]) != HashPrefix+hexOf(sum[:]) {
			t.Fatalf("ParseHash(%q) accepted a different value", s)
		}
	})
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func BenchmarkAuthenticateToken(b *testing.B) {
	ts := make([]Tenant, 0, 100)
	for i := range 100 {
		ts = append(ts, Tenant{Name: "t" + strconv.Itoa(i), TokenHashes: []string{HashToken("tok" + strconv.Itoa(i))}})
	}
	a, err := New(true, ts)
	if err != nil {
		b.Fatal(err)
	}
	ctx := withToken("Bearer tok99")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
