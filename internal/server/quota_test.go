package server_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// slots is a SlotStore in memory, shared by the servers given it, or
// failing with err.
type slots struct {
	mu       sync.Mutex
	held     map[string]int
	err      error
	released int
}

func (s *slots) Acquire(_ context.Context, tenant string, max int, _ time.Duration) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return "", false, s.err
	}
	if s.held[tenant] >= max {
		return "", false, nil
	}
	s.held[tenant]++
	return tenant, true, nil
}

func (s *slots) Renew(context.Context, string, string, time.Duration) (bool, error) { return true, nil }

func (s *slots) Release(_ context.Context, tenant, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[tenant]--
	s.released++
	return nil
}

// TestSharedQuota: a tenant at its max_concurrent in the shared store
// (on another replica) is refused here although this replica runs none
// of its executions; a store that fails admits (this replica's own quota
// alone holds); every slot taken is given back.
func TestSharedQuota(t *testing.T) {
	tenant := &auth.Tenant{Name: "t", MaxConcurrent: 1}
	st := &slots{held: map[string]int{}}
	adm, err := admission.New(admission.Config{MaxConcurrent: 4, MaxQueue: 4, MaxWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Close() })
	withTenant := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(auth.WithTenant(ctx, tenant), req)
	}
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(withTenant))
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex, server.WithAdmission(adm), server.WithSharedQuota(st)))
	rpc := ptcv1.NewRunnerServiceClient(serve(t, gs))
	run := func() error {
		_, err := rpc.Execute(context.Background(), &ptcv1.ExecuteRequest{Script: js(`return 1`)})
		return err
	}
	steps := []struct {
		name     string
		heldElse int // slots the tenant holds on other replicas
		err      error
		code     codes.Code
	}{
		{"a free slot", 0, nil, codes.OK},
		{"the slot held on another replica", 1, nil, codes.ResourceExhausted},
		{"store down: admitted", 1, errors.New("connection refused"), codes.OK},
		{"store back, slot free", 0, nil, codes.OK},
	}
	for _, s := range steps {
		st.mu.Lock()
		st.held["t"], st.err = s.heldElse, s.err
		st.mu.Unlock()
		err := run()
		if status.Code(err) != s.code {
			t.Fatalf("%s: %v, want %s", s.name, err, s.code)
		}
		if s.code == codes.ResourceExhausted && !strings.Contains(err.Error(), "across the replicas") {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	if st.released != 2 {
		t.Fatalf("%d slots released, want 2", st.released)
	}
}
