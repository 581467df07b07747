package auth_test

import (
	"context"
	"fmt"

	"google.golang.org/grpc/metadata"

	"github.com/ptcrun/ptc/internal/auth"
)

func ExampleAuthenticator_Authenticate() {
	// The file stores only the hash (`ptcd hash-token` prints it).
	a, err := auth.New(true, []auth.Tenant{{Name: "acme", TokenHashes: []string{auth.HashToken("s3cret-token")}, Tools: []string{"crm.*"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer s3cret-token"))
	ctx, err = a.Authenticate(ctx)
	t, _ := auth.FromContext(ctx)
	fmt.Println(err, t.Name, t.AllowsTool("crm.search"), t.AllowsTool("billing.refund"))

	_, err = a.Authenticate(context.Background())
	fmt.Println(err)
	// Output:
	// <nil> acme true false
	// rpc error: code = Unauthenticated desc = credentials are missing: send metadata "authorization: Bearer <token>" or a client certificate
}
