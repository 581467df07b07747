package auth

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestAdmit: the check at stream start, from the method and the header
// metadata alone, refuses what Authenticate refuses and admits the rest;
// health checks need no credentials; with authentication off every
// stream is admitted.
func TestAdmit(t *testing.T) {
	on, err := New(true, tenants())
	if err != nil {
		t.Fatal(err)
	}
	off, err := New(false, nil)
	if err != nil {
		t.Fatal(err)
	}
	const exec = "/ptc.v1.RunnerService/Execute"
	cases := []struct {
		name   string
		a      *Authenticator
		ctx    context.Context
		method string
		md     metadata.MD
		code   codes.Code
		msg    string
		tenant string
	}{
		{"no credentials", on, context.Background(), exec, nil, codes.Unauthenticated, "credentials are missing", ""},
		{"good token", on, context.Background(), exec, metadata.Pairs("authorization", "Bearer "+tokenA), codes.OK, "", "a"},
		{"bad token", on, context.Background(), exec, metadata.Pairs("authorization", "Bearer nope"), codes.Unauthenticated, "not valid", ""},
		{"two headers", on, context.Background(), exec, metadata.Pairs("authorization", "Bearer a", "authorization", "Bearer b"), codes.Unauthenticated, "one authorization", ""},
		{"cert", on, withCert(context.Background(), "harness-b"), exec, nil, codes.OK, "", "b"},
		{"unknown cert", on, withCert(context.Background(), "stranger"), exec, nil, codes.Unauthenticated, "belongs to no tenant", ""},
		{"health", on, context.Background(), HealthService + "Check", nil, codes.OK, "", ""},
		{"auth off", off, context.Background(), exec, nil, codes.OK, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tenant, err := tc.a.Admit(tc.ctx, tc.method, tc.md)
			if status.Code(err) != tc.code || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("err = %v, want %v %q", err, tc.code, tc.msg)
			}
			if tenant != tc.tenant {
				t.Fatalf("tenant = %q, want %q", tenant, tc.tenant)
			}
		})
	}
}
