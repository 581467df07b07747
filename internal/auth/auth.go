// Package auth authenticates ptcd's callers and maps them to tenants.
//
// A caller proves who it is with a bearer token (gRPC metadata
// "authorization: Bearer <token>") or, on a TLS listener with a client CA,
// a client certificate whose subject common name or URI SAN names a tenant
// identity. Tokens are stored only as hashes ("sha256:<hex>", see
// HashToken) and compared in constant time.
//
// A Tenant carries what its callers may do: which server tools they may
// use, the ceilings of their limits, how many executions they may run at
// once and how many requests per second they may send.
//
// Package auth imports no engine and no server: internal/server reads the
// tenant from the context that Authenticator.Authenticate returns.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/limits"
)

// HashPrefix starts every stored token hash.
const HashPrefix = "sha256:"

// MaxTokenBytes bounds a bearer token; longer ones are refused unread.
const MaxTokenBytes = 4096

// HealthService is the gRPC health service, which needs no credentials so
// that load balancers can probe it.
const HealthService = "/grpc.health.v1.Health/"

// Tenant is one set of callers and what they may do.
type Tenant struct {
	// Name identifies the tenant in logs and metrics.
	Name string
	// TokenHashes are the hashes (HashToken) of the tenant's bearer tokens.
	TokenHashes []string
	// ClientIdentities are client-certificate identities (a subject common
	// name or a URI SAN such as spiffe://example.org/harness).
	ClientIdentities []string
	// Tools are the server tools the tenant may use: names or path.Match
	// globs ("crm.*"; * matches any characters but "/", dots included);
	// empty means every server tool.
	Tools []string
	// Ceilings cap the tenant's limits below the server's; a zero field
	// adds no cap. They are an input of the executor's Prepare, which
	// resolves a request's limits under the server's policy narrowed by
	// them (limits.Policy.Resolve).
	Ceilings limits.Limits
	// MaxConcurrent bounds the tenant's executions at once; 0 means only
	// the server-wide cap applies.
	MaxConcurrent int
	// Rate is the tenant's sustained requests per second; 0 means no rate
	// limit.
	Rate float64
	// Burst is how many requests may arrive at once above Rate; 0 means
	// max(1, Rate).
	Burst int

	hashes [][sha256.Size]byte
}

// Anonymous returns the tenant of every caller when authentication is
// off: no tool, limit or rate restrictions beyond the server's own.
func Anonymous() *Tenant { return &Tenant{Name: "anonymous"} }

// AllowsTool reports whether the tenant may use the server tool name.
func (t *Tenant) AllowsTool(name string) bool {
	if len(t.Tools) == 0 {
		return true
	}
	for _, p := range t.Tools {
		if p == name {
			return true
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// RestrictsTools reports whether the tenant's tool set is narrower than
// every server tool.
func (t *Tenant) RestrictsTools() bool { return len(t.Tools) > 0 }

// HashToken returns the stored form of a bearer token: "sha256:" and the
// hex SHA-256 of the token with surrounding white space removed.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return HashPrefix + hex.EncodeToString(sum[:])
}

// ParseHash parses a stored token hash ("sha256:<64 hex digits>").
func ParseHash(s string) ([sha256.Size]byte, error) {
	var out [sha256.Size]byte
	hexPart, ok := strings.CutPrefix(s, HashPrefix)
	if !ok {
		return out, fmt.Errorf("token hash %.20q must start with %q: store HashToken's output (ptcd hash-token), never the token", s, HashPrefix)
	}
	if len(hexPart) != 2*sha256.Size {
		return out, fmt.Errorf("token hash must have %d hex digits after %q, not %d", 2*sha256.Size, HashPrefix, len(hexPart))
	}
	if _, err := hex.Decode(out[:], []byte(hexPart)); err != nil {
		return out, fmt.Errorf("token hash has a character that is not a hex digit: %w", err)
	}
	return out, nil
}

// Authenticator maps credentials to tenants. Create it with New; it is
// safe for concurrent use and never changes after New.
type Authenticator struct {
	enabled    bool
	tenants    []*Tenant
	byIdentity map[string]*Tenant
	anonymous  *Tenant
}

// New returns an Authenticator over tenants. With enabled false every
// caller is the anonymous tenant and tenants are ignored. Tenant names,
// tokens and identities must be unique; hashes must parse.
func New(enabled bool, tenants []Tenant) (*Authenticator, error) {
	a := &Authenticator{enabled: enabled, byIdentity: map[string]*Tenant{}, anonymous: Anonymous()}
	names := map[string]bool{}
	seenHash := map[[sha256.Size]byte]string{}
	for i := range tenants {
		t := tenants[i] // a copy: the caller's slice is never kept
		if t.Name == "" {
			return nil, fmt.Errorf("tenants[%d]: name is required", i)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("tenants[%d]: name %q is used twice", i, t.Name)
		}
		names[t.Name] = true
		if t.MaxConcurrent < 0 || t.Rate < 0 || t.Burst < 0 {
			return nil, fmt.Errorf("tenant %s: max_concurrent, rate and burst must not be negative", t.Name)
		}
		if err := t.Ceilings.Check(); err != nil {
			return nil, fmt.Errorf("tenant %s: ceilings: %w", t.Name, err)
		}
		for _, p := range t.Tools {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return nil, fmt.Errorf("tenant %s: tools pattern %q is malformed: use names or globs such as \"crm.*\"", t.Name, p)
			}
		}
		t.hashes = nil
		for _, h := range t.TokenHashes {
			sum, err := ParseHash(h)
			if err != nil {
				return nil, fmt.Errorf("tenant %s: %w", t.Name, err)
			}
			if other, dup := seenHash[sum]; dup {
				return nil, fmt.Errorf("tenant %s: a token hash is also a token of tenant %s: give each tenant its own tokens", t.Name, other)
			}
			seenHash[sum] = t.Name
			t.hashes = append(t.hashes, sum)
		}
		tp := &t
		for _, id := range t.ClientIdentities {
			if id == "" {
				return nil, fmt.Errorf("tenant %s: client_identities has an empty entry", t.Name)
			}
			if other, dup := a.byIdentity[id]; dup {
				return nil, fmt.Errorf("tenant %s: client identity %q is also one of tenant %s", t.Name, id, other.Name)
			}
			a.byIdentity[id] = tp
		}
		a.tenants = append(a.tenants, tp)
	}
	return a, nil
}

// Enabled reports whether callers must authenticate.
func (a *Authenticator) Enabled() bool { return a.enabled }

type tenantKey struct{}

// WithTenant returns ctx carrying t.
func WithTenant(ctx context.Context, t *Tenant) context.Context {
	return context.WithValue(ctx, tenantKey{}, t)
}

// FromContext returns the tenant that Authenticate put in ctx.
func FromContext(ctx context.Context) (*Tenant, bool) {
	t, ok := ctx.Value(tenantKey{}).(*Tenant)
	return t, ok && t != nil
}

// Authenticate is a go-grpc-middleware auth.AuthFunc: it finds the
// caller's tenant from a bearer token or a verified client certificate and
// returns ctx carrying it. A missing or unknown credential is
// UNAUTHENTICATED. Health checks need no credentials.
func (a *Authenticator) Authenticate(ctx context.Context) (context.Context, error) {
	method, _ := grpc.Method(ctx)
	md, _ := metadata.FromIncomingContext(ctx)
	t, err := a.authenticate(ctx, method, md)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return ctx, nil
	}
	return WithTenant(ctx, t), nil
}

// Admit checks a gRPC stream's credentials when the stream starts, from
// its method and header metadata, before any of its body is read (it is
// a grpc.InTapHandle's check, see internal/server's transport): a caller
// without valid credentials is refused with UNAUTHENTICATED, as
// Authenticate would refuse it, without the server buffering its request.
// It returns the caller's tenant name, by which the transport bounds each
// tenant's streams: "" when there is none to tell apart (a health check,
// or authentication off, where every caller is the anonymous tenant). Authenticate still runs for
// every admitted call and puts the tenant in its context.
func (a *Authenticator) Admit(ctx context.Context, method string, md metadata.MD) (string, error) {
	t, err := a.authenticate(ctx, method, md)
	if err != nil || t == nil || !a.enabled {
		return "", err
	}
	return t.Name, nil
}

// authenticate finds the tenant of a call to method with header metadata
// md (and the verified client certificate of ctx's peer): the anonymous
// tenant when authentication is off, nil for a health check, an
// UNAUTHENTICATED status when the credentials are missing or wrong.
func (a *Authenticator) authenticate(ctx context.Context, method string, md metadata.MD) (*Tenant, error) {
	if !a.enabled {
		return a.anonymous, nil
	}
	if strings.HasPrefix(method, HealthService) {
		return nil, nil
	}
	t, err := a.resolve(md.Get("authorization"), peerIdentities(ctx))
	if errors.Is(err, errMissing) {
		return nil, status.Error(codes.Unauthenticated, "credentials are missing: send metadata \"authorization: Bearer <token>\" or a client certificate")
	}
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, err.Error())
	}
	return t, nil
}

// AuthenticateHTTP finds the tenant of an HTTP request as Authenticate does
// for a gRPC call: from its "Authorization: Bearer <token>" header or a
// verified client certificate; with authentication off, every caller is
// the anonymous tenant. The error says what is wrong with the credentials
// (the caller answers 401).
func (a *Authenticator) AuthenticateHTTP(r *http.Request) (*Tenant, error) {
	if !a.enabled {
		return a.anonymous, nil
	}
	var ids []string
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		ids = CertIdentities(r.TLS.VerifiedChains[0][0])
	}
	t, err := a.resolve(r.Header.Values("Authorization"), ids)
	if errors.Is(err, errMissing) {
		return nil, errors.New("credentials are missing: send the header \"Authorization: Bearer <token>\" or a client certificate")
	}
	return t, err
}

// resolve finds the tenant of the authorization header values (at most
// one) or, without one, of the verified client certificate's identities.
func (a *Authenticator) resolve(authorization []string, ids []string) (*Tenant, error) {
	switch {
	case len(authorization) > 1:
		return nil, errors.New("send one authorization header, not several")
	case len(authorization) == 1:
		token, err := ParseBearer(authorization[0])
		if err != nil {
			return nil, err
		}
		t := a.byToken(token)
		if t == nil {
			return nil, errors.New("the bearer token is not valid: check the token the operator issued")
		}
		return t, nil
	case len(ids) > 0:
		for _, id := range ids {
			if t, ok := a.byIdentity[id]; ok {
				return t, nil
			}
		}
		return nil, fmt.Errorf("the client certificate's identity %q belongs to no tenant: ask the operator to add it to a tenant's client_identities", ids[0])
	}
	return nil, errMissing
}

// errMissing is resolve's answer to a caller without credentials; each
// transport says how to send them.
var errMissing = errors.New("credentials are missing")

// byToken compares the token's hash with every stored hash in constant
// time, so the time taken says nothing about which tenant nearly matched.
func (a *Authenticator) byToken(token string) *Tenant {
	sum := sha256.Sum256([]byte(token))
	var found *Tenant
	for _, t := range a.tenants {
		for i := range t.hashes {
			if subtle.ConstantTimeCompare(sum[:], t.hashes[i][:]) == 1 && found == nil {
				found = t
			}
		}
	}
	return found
}

// ParseBearer extracts the token of an authorization header value
// ("Bearer <token>", scheme case-insensitive).
func ParseBearer(v string) (string, error) {
	if len(v) > MaxTokenBytes+len("Bearer ") {
		return "", fmt.Errorf("the authorization header is longer than %d bytes", MaxTokenBytes)
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", errors.New("the authorization header must be \"Bearer <token>\"")
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", errors.New("the bearer token is empty")
	}
	return token, nil
}

// peerIdentities returns the identities of a verified client certificate:
// its URI SANs, then its subject common name.
func peerIdentities(ctx context.Context) []string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.AuthInfo == nil {
		return nil
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return CertIdentities(ti.State.VerifiedChains[0][0])
}

// CertIdentities returns the identities a certificate proves: its URI
// SANs and its subject common name.
func CertIdentities(c *x509.Certificate) []string {
	var out []string
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	if c.Subject.CommonName != "" {
		out = append(out, c.Subject.CommonName)
	}
	return out
}
