package auth

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestAuthenticateHTTP: an HTTP request authenticates as a gRPC call does,
// from its Authorization header or its verified client certificate.
func TestAuthenticateHTTP(t *testing.T) {
	a, err := New(true, tenants())
	if err != nil {
		t.Fatal(err)
	}
	cert := func(cn string, uris ...string) *tls.ConnectionState {
		c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
		for _, u := range uris {
			pu, _ := url.Parse(u)
			c.URIs = append(c.URIs, pu)
		}
		return &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{c}}}
	}
	cases := []struct {
		name    string
		headers []string
		tls     *tls.ConnectionState
		tenant  string
		msg     string
	}{
		{"no credentials", nil, nil, "", `send the header "Authorization: Bearer <token>"`},
		{"good token", []string{"Bearer " + tokenA}, nil, "a", ""},
		{"scheme case", []string{"bearer " + tokenA}, nil, "a", ""},
		{"bad token", []string{"Bearer nope"}, nil, "", "not valid"},
		{"basic scheme", []string{"Basic abc"}, nil, "", "Bearer <token>"},
		{"two headers", []string{"Bearer " + tokenA, "Bearer " + tokenA}, nil, "", "one authorization"},
		{"huge header", []string{"Bearer " + strings.Repeat("x", MaxTokenBytes+1)}, nil, "", "longer"},
		{"cert", nil, cert("harness-b"), "b", ""},
		{"cert uri san", nil, cert("x", "spiffe://example.org/b"), "b", ""},
		{"unknown cert", nil, cert("stranger"), "", "belongs to no tenant"},
		{"unverified cert", nil, &tls.ConnectionState{}, "", "credentials are missing"},
		{"token wins over cert", []string{"Bearer " + tokenA}, cert("harness-b"), "a", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			for _, h := range tc.headers {
				r.Header.Add("Authorization", h)
			}
			r.TLS = tc.tls
			tn, err := a.AuthenticateHTTP(r)
			if tc.msg != "" {
				if err == nil || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err = %v, want %q", err, tc.msg)
				}
				return
			}
			if err != nil || tn.Name != tc.tenant {
				t.Fatalf("tenant %v err %v", tn, err)
			}
		})
	}

	off, err := New(false, tenants())
	if err != nil {
		t.Fatal(err)
	}
	if tn, err := off.AuthenticateHTTP(httptest.NewRequest("POST", "/mcp", nil)); err != nil || tn.Name != "anonymous" {
		t.Fatal(tn, err)
	}
}
