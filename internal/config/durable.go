package config

import (
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"
	"time"
)

// Defaults of the durable section: the continuation manager's and the
// executor's (internal/service tests that they agree).
const (
	DefaultDurableTTL               = 24 * time.Hour
	DefaultDurableMaxTokenBytes     = 256 << 10
	DefaultDurableMaxStateBytes     = 64 << 20
	DefaultDurableOutcomeRetention  = 10 * time.Minute
	DefaultDurableOutcomeBytes      = 64 << 20
	DefaultDurableMaxBytesPerTenant = 1 << 30
	DefaultParkedMax                = 64
	DefaultParkedMaxBytes           = 256 << 20
	DefaultParkedMaxAge             = 10 * time.Minute
	DefaultLeaseTTL                 = 15 * time.Second
	DefaultLeaseRenewEvery          = 5 * time.Second
	DefaultMaxTakeovers             = 3
	// MaxDurableKeyIDLength bounds a continuation key's id.
	MaxDurableKeyIDLength = 64
)

// Durable configures resumable executions (see docs/durable.md): the keys
// that sign continuations, their lifetime and size, where large paused
// states and used continuations are kept, and the paused executions kept
// in memory.
type Durable struct {
	// Keys sign and encrypt continuations: the first signs new ones, all
	// verify. Each secret comes from an environment variable. Without
	// keys ptcd makes one at start: its continuations do not survive a
	// restart and no other replica can resume them.
	Keys []DurableKey `yaml:"keys,omitempty"`
	// TTL is how long a continuation can be resumed.
	TTL Duration `yaml:"ttl"`
	// MaxTokenBytes bounds a continuation; larger paused states go to the
	// store, or the execution ends with PAUSE_LIMIT.
	MaxTokenBytes ByteSize `yaml:"max_token_bytes"`
	// MaxStateBytes bounds a paused state.
	MaxStateBytes ByteSize `yaml:"max_state_bytes"`
	// MaxBytesPerTenant bounds the paused states the store holds for one
	// tenant: a pause past it ends its execution with PAUSE_LIMIT. A
	// state counts until it is resumed or its continuation expires.
	MaxBytesPerTenant ByteSize `yaml:"max_bytes_per_tenant"`
	// MaxBytes bounds the paused states the store holds for all tenants
	// (0: no bound beyond each tenant's).
	MaxBytes ByteSize `yaml:"max_bytes,omitempty"`
	// OutcomeRetention is how long the outcome of a Resume is kept for a
	// retry with the same continuation and answers (never beyond the
	// continuation's expiry).
	OutcomeRetention Duration `yaml:"outcome_retention"`
	// OutcomeBytes bounds the outcomes kept in memory (without a store),
	// the oldest dropped first.
	OutcomeBytes ByteSize `yaml:"outcome_bytes"`
	// Store keeps large paused states and used continuations.
	Store DurableStore `yaml:"store,omitempty"`
	// Parked bounds the paused executions kept in memory.
	Parked Parked `yaml:"parked"`
	// Lease configures the lease the replica running a resume holds in
	// the store, and the takeover of a resume whose replica stopped.
	Lease Lease `yaml:"lease"`
	// Forward sends a Resume to the replica that parked its execution
	// (with a Redis store).
	Forward Forward `yaml:"forward,omitempty"`
}

// DefaultForwardTimeout is the default of durable.forward.timeout.
const DefaultForwardTimeout = 5 * time.Minute

// Forward configures resume forwarding (docs/durable.md, "Replicas").
type Forward struct {
	// Advertise is this replica's gRPC address as the other replicas
	// reach it (host:port; in Kubernetes the pod's IP and port). Empty:
	// no forwarding (a Resume runs where it lands, re-running the
	// execution when another replica parked it).
	Advertise string `yaml:"advertise,omitempty"`
	// Timeout bounds a forwarded Resume (the caller's deadline, when
	// sooner, applies too).
	Timeout Duration `yaml:"timeout,omitempty"`
}

// Lease configures resume leases (docs/durable.md, "Takeover").
type Lease struct {
	// TTL is how long a lease lasts without a renewal: how long a retry
	// waits, at most, before it takes over the resume of a replica that
	// died.
	TTL Duration `yaml:"ttl"`
	// RenewEvery is how often the replica running a resume renews its
	// lease; shorter than TTL.
	RenewEvery Duration `yaml:"renew_every"`
	// MaxTakeovers bounds the takeovers of one resume (0: none).
	MaxTakeovers int `yaml:"max_takeovers"`
}

// DurableKey is one continuation key.
type DurableKey struct {
	// ID names the key inside the continuations it signs.
	ID string `yaml:"id"`
	// SecretEnv names the environment variable that holds the secret (at
	// least 32 bytes).
	SecretEnv string `yaml:"secret_env"`
}

// DurableStore selects the state store: File (one file, bbolt; this
// replica only), Redis or PostgreSQL (shared by replicas); at most one.
// None: used continuations are remembered in memory, per replica, until
// a restart.
type DurableStore struct {
	File string `yaml:"file,omitempty"`
	// RedisURLEnv names the environment variable that holds the Redis URL
	// (it may carry a password).
	RedisURLEnv string `yaml:"redis_url_env,omitempty"`
	// RedisPrefix prefixes the Redis keys (default "ptc:durable:").
	RedisPrefix string `yaml:"redis_prefix,omitempty"`
	// PostgresDSNEnv names the environment variable that holds the
	// PostgreSQL connection string (it may carry a password).
	PostgresDSNEnv string `yaml:"postgres_dsn_env,omitempty"`
	// PostgresDSNFile names a file that holds the PostgreSQL connection
	// string (a mounted secret), read at start.
	PostgresDSNFile string `yaml:"postgres_dsn_file,omitempty"`
}

// stores lists the store keys set, by name.
func (s DurableStore) stores() []string {
	var set []string
	for _, k := range []struct{ name, v string }{{"file", s.File}, {"redis_url_env", s.RedisURLEnv},
		{"postgres_dsn_env", s.PostgresDSNEnv}, {"postgres_dsn_file", s.PostgresDSNFile}} {
		if k.v != "" {
			set = append(set, k.name)
		}
	}
	return set
}

// Parked bounds the paused executions kept in memory to be resumed without
// a re-run.
type Parked struct {
	// Max bounds their number (0: none are kept).
	Max int `yaml:"max"`
	// MaxBytes bounds their estimated memory.
	MaxBytes ByteSize `yaml:"max_bytes,omitempty"`
	// MaxAge drops an execution kept this long.
	MaxAge Duration `yaml:"max_age"`
}

// Approvals lists the server tools whose every call needs approval.
type Approvals struct {
	// Tools are glob patterns (path.Match) over tool names.
	Tools []string `yaml:"tools,omitempty"`
}

// Approval policies of an MCP tool source (tool_sources[].approval).
const (
	ApprovalNone        = "none"
	ApprovalAll         = "all"
	ApprovalNotReadOnly = "not_read_only"
	ApprovalDestructive = "destructive"
)

func defaultDurable() Durable {
	return Durable{TTL: Duration(DefaultDurableTTL), MaxTokenBytes: ByteSize(DefaultDurableMaxTokenBytes),
		MaxStateBytes:     ByteSize(DefaultDurableMaxStateBytes),
		MaxBytesPerTenant: ByteSize(DefaultDurableMaxBytesPerTenant),
		OutcomeRetention:  Duration(DefaultDurableOutcomeRetention), OutcomeBytes: ByteSize(DefaultDurableOutcomeBytes),
		Parked: Parked{Max: DefaultParkedMax, MaxBytes: ByteSize(DefaultParkedMaxBytes),
			MaxAge: Duration(DefaultParkedMaxAge)},
		Lease: Lease{TTL: Duration(DefaultLeaseTTL), RenewEvery: Duration(DefaultLeaseRenewEvery), MaxTakeovers: DefaultMaxTakeovers}}
}

// validate checks the durable section, naming the key.
func (d *Durable) validate() *Error {
	ids := map[string]int{}
	for i, k := range d.Keys {
		key := fmt.Sprintf("durable.keys[%d]", i)
		if k.ID == "" || len(k.ID) > MaxDurableKeyIDLength {
			return keyError(key+".id", "%q is not a key id: use 1 to %d characters; continuations name the key that signed them", k.ID, MaxDurableKeyIDLength)
		}
		if j, dup := ids[k.ID]; dup {
			return keyError(key+".id", "%q is also the id of durable.keys[%d]: give each key its own id", k.ID, j)
		}
		ids[k.ID] = i
		if !envNameRE.MatchString(k.SecretEnv) {
			return keyError(key+".secret_env", "must name an environment variable (e.g. PTC_DURABLE_KEY_%d), not hold the secret: secrets come only from the environment", i)
		}
	}
	switch {
	case d.TTL <= 0:
		return keyError("durable.ttl", "%s is not positive: use a duration such as \"24h\"", d.TTL)
	case d.MaxTokenBytes < 1024:
		return keyError("durable.max_token_bytes", "%s is below 1KiB: use a size such as 64KiB", d.MaxTokenBytes)
	case d.MaxStateBytes < d.MaxTokenBytes:
		return keyError("durable.max_state_bytes", "%s is below durable.max_token_bytes (%s): a paused state in the store can be no smaller than one in a continuation", d.MaxStateBytes, d.MaxTokenBytes)
	case d.MaxBytesPerTenant <= 0:
		return keyError("durable.max_bytes_per_tenant", "%s is not positive: use a size such as 1GiB (the paused states the store keeps for one tenant)", d.MaxBytesPerTenant)
	case d.MaxBytes < 0:
		return keyError("durable.max_bytes", "%s is negative: use 0 for no bound beyond each tenant's, or a size such as 8GiB", d.MaxBytes)
	case d.OutcomeRetention <= 0:
		return keyError("durable.outcome_retention", "%s is not positive: use a duration such as \"10m\" (how long a Resume's outcome is kept for a retry)", d.OutcomeRetention)
	case d.OutcomeBytes <= 0:
		return keyError("durable.outcome_bytes", "%s is not positive: use a size such as 64MiB", d.OutcomeBytes)
	case len(d.Store.stores()) > 1:
		return keyError("durable.store", "has %s: give one (file for one replica, Redis or PostgreSQL for several)", strings.Join(d.Store.stores(), " and "))
	case d.Store.RedisURLEnv != "" && !envNameRE.MatchString(d.Store.RedisURLEnv):
		return keyError("durable.store.redis_url_env", "must name an environment variable (e.g. PTC_REDIS_URL), not hold the URL: it may carry a password")
	case d.Store.PostgresDSNEnv != "" && !envNameRE.MatchString(d.Store.PostgresDSNEnv):
		return keyError("durable.store.postgres_dsn_env", "must name an environment variable (e.g. PTC_POSTGRES_DSN), not hold the connection string: it may carry a password (or use postgres_dsn_file)")
	case d.Parked.Max < 0:
		return keyError("durable.parked.max", "%d is negative: use 0 to keep no paused execution in memory, or more", d.Parked.Max)
	case d.Parked.MaxBytes < 0:
		return keyError("durable.parked.max_bytes", "%s is negative: use a size such as 256MiB", d.Parked.MaxBytes)
	case d.Parked.MaxAge < 0:
		return keyError("durable.parked.max_age", "%s is negative: use a duration such as \"10m\"", d.Parked.MaxAge)
	case d.Lease.TTL < Duration(100*time.Millisecond):
		return keyError("durable.lease.ttl", "%s is below 100ms: use a duration such as \"15s\" (how long a retry waits before it takes over the resume of a replica that stopped)", d.Lease.TTL)
	case d.Lease.RenewEvery <= 0 || d.Lease.RenewEvery >= d.Lease.TTL:
		return keyError("durable.lease.renew_every", "%s must be positive and shorter than durable.lease.ttl (%s): use about a third of it", d.Lease.RenewEvery, d.Lease.TTL)
	case d.Forward.Advertise != "" && d.Store.RedisURLEnv == "":
		return keyError("durable.forward.advertise", "needs a Redis store (durable.store.redis_url_env): replicas find the owner of a paused execution there")
	case d.Forward.Advertise != "" && !validHostPort(d.Forward.Advertise):
		return keyError("durable.forward.advertise", "%q is not host:port: give the address other replicas reach this one's gRPC listener at, e.g. 10.0.3.7:50051", d.Forward.Advertise)
	case d.Forward.Timeout < 0:
		return keyError("durable.forward.timeout", "%s is negative: use a duration such as \"5m\"", d.Forward.Timeout)
	case d.Lease.MaxTakeovers < 0:
		return keyError("durable.lease.max_takeovers", "%d is negative: use 0 to take no resume over, or more", d.Lease.MaxTakeovers)
	}
	return nil
}

// ApprovalRule reports whether the approvals section requires approval for
// a tool.
func (c *Config) ApprovalRule() func(string) bool {
	pats := c.Approvals.Tools
	if len(pats) == 0 {
		return nil
	}
	return func(name string) bool {
		for _, p := range pats {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
		return false
	}
}

// validate checks the approvals section.
func (a Approvals) validate() *Error {
	for i, p := range a.Tools {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return keyError(fmt.Sprintf("approvals.tools[%d]", i), "%q is not a tool name or glob: use names or globs such as \"crm.delete_*\"", p)
		}
	}
	return nil
}

// validHostPort reports whether s is host:port with a host and a port
// number.
func validHostPort(s string) bool {
	h, p, err := net.SplitHostPort(s)
	if err != nil || h == "" {
		return false
	}
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536
}
