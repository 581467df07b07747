// Package httpsource turns configured HTTP endpoints into ptc tools. Each
// endpoint has a method, a URL template filled from the call's arguments
// ({id} is path-escaped), a JSON body built from the remaining arguments or
// an explicit mapping, headers whose values come only from environment
// variables, a response size cap and a timeout. A non-2xx answer becomes a
// *tools.Error with code "http_<status>"; 429 and 5xx answers and network
// failures are marked transient so that a policy may retry them. The call's
// idempotency key is sent as the Idempotency-Key header.
//
// Each request is an OpenTelemetry client span ("GET /users/{id}": the
// template, never the arguments filled into it) whose W3C trace context
// goes out in the traceparent header, so the endpoint's own spans join the
// caller's trace.
//
// Package httpsource imports only packages tools and tools/policy of ptc,
// and the OpenTelemetry API.
package httpsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/policy"
)

// Defaults of an endpoint.
const (
	// DefaultMaxResponseBytes caps a response body when none is set.
	DefaultMaxResponseBytes = 1 << 20
	// DefaultTimeout bounds one request when no timeout is set.
	DefaultTimeout = 30 * time.Second
	// MaxExcerptBytes bounds the body excerpt kept in an http_<status> error.
	MaxExcerptBytes = 512
)

// Error codes produced by HTTP tools, besides "http_<status>" and
// tools.CodeInvalidArguments (an argument a URL template or body mapping
// needs is missing or not a scalar).
const (
	// CodeResponseTooLarge: the response body is above the size cap.
	CodeResponseTooLarge = "response_too_large"
	// CodeUnreachable: the endpoint could not be reached.
	CodeUnreachable = "unreachable"
)

// Endpoint configures one HTTP tool.
type Endpoint struct {
	// Name is the tool's name within its source (the tool is called
	// "<source>.<name>").
	Name string
	// Description is shown to models.
	Description string
	// Method is the HTTP method; empty means GET.
	Method string
	// URL is the URL template: "{arg}" is replaced by the argument's value,
	// path-escaped in the path and query-escaped in the query. Placeholders
	// may not appear in the scheme or host.
	URL string
	// HeadersFromEnv maps a header name to the environment variable that
	// holds its value. Header values never come from the configuration
	// itself, so secrets stay out of files and printouts.
	HeadersFromEnv map[string]string
	// Body maps JSON body fields to argument names. When nil, the arguments
	// not used by the URL template form the body (for GET, HEAD and DELETE
	// they become query parameters instead).
	Body map[string]string
	// InputSchema is the JSON Schema of the arguments; empty means any object.
	InputSchema json.RawMessage
	// OutputSchema, when set, is the JSON Schema of the result.
	OutputSchema json.RawMessage
	// MaxResponseBytes caps the response body; 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Timeout bounds one request; 0 means DefaultTimeout.
	Timeout time.Duration
	// Policy adds retries, a call budget and a concurrency cap.
	Policy policy.Config
}

// Config configures a Source.
type Config struct {
	// Name is the source's name, the first segment of its tools' names.
	Name string
	// Endpoints are the source's tools.
	Endpoints []Endpoint
	// Client sends the requests; nil means a client with no overall timeout
	// (each request has its own) that follows redirects only within the
	// same host, so configured headers never reach another host.
	Client *http.Client
	// LookupEnv reads environment variables; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// TracerProvider makes the span of each request; nil means the
	// OpenTelemetry global one (which makes none unless the program set
	// one).
	TracerProvider trace.TracerProvider
	// Propagator writes the trace context into each request's headers;
	// nil means the OpenTelemetry global one.
	Propagator propagation.TextMapPropagator
}

// Source is a set of HTTP tools. Its tool set never changes.
type Source struct {
	name  string
	tools []tools.Tool
}

// placeholderRE matches "{name}" in a URL template.
var placeholderRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// New checks cfg, reads the header variables it names, and returns the
// source. A variable that is not set is an error.
func New(cfg Config) (*Source, error) {
	if err := tools.ValidateName(cfg.Name); err != nil {
		return nil, fmt.Errorf("http source: %w", err)
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{CheckRedirect: sameHostRedirects}
	}
	lookup := cfg.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	tr := tracing{provider: cfg.TracerProvider, propagator: cfg.Propagator}
	if tr.provider == nil {
		tr.provider = otel.GetTracerProvider()
	}
	if tr.propagator == nil {
		tr.propagator = otel.GetTextMapPropagator()
	}
	s := &Source{name: cfg.Name}
	seen := map[string]bool{}
	for i, ep := range cfg.Endpoints {
		if seen[ep.Name] {
			return nil, fmt.Errorf("http source %s: tool %q is defined twice", cfg.Name, ep.Name)
		}
		seen[ep.Name] = true
		t, err := newTool(cfg.Name, ep, client, lookup, tr)
		if err != nil {
			return nil, fmt.Errorf("http source %s: endpoint %d (%s): %w", cfg.Name, i, ep.Name, err)
		}
		s.tools = append(s.tools, t)
	}
	return s, nil
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Tools returns the source's tools, named "<source>.<endpoint>".
func (s *Source) Tools() []tools.Tool { return append([]tools.Tool(nil), s.tools...) }

// OnChange registers fn to be called when the tool set changes. The tool
// set of an HTTP source is fixed, so fn is never called.
func (s *Source) OnChange(fn func()) {}

// Close releases the source; it holds no resources.
func (s *Source) Close() error { return nil }

type endpoint struct {
	Endpoint
	tool     string
	method   string
	origin   string // scheme://host[:port] of the template
	pathTmpl string // path of the template, placeholders intact
	queryTmp string // query of the template, placeholders intact
	headers  http.Header
	client   *http.Client
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	// spanName is "<method> <path template>".
	spanName string
	host     string
	port     int
}

// tracing is where spans go.
type tracing struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
}

func newTool(source string, ep Endpoint, client *http.Client, lookup func(string) (string, bool), tr tracing) (tools.Tool, error) {
	name := source + "." + ep.Name
	if err := tools.ValidateName(name); err != nil {
		return tools.Tool{}, err
	}
	if err := ep.Policy.Validate(); err != nil {
		return tools.Tool{}, err
	}
	e := &endpoint{Endpoint: ep, tool: name, client: client, headers: http.Header{}}
	e.method = strings.ToUpper(ep.Method)
	if e.method == "" {
		e.method = http.MethodGet
	}
	switch e.method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead:
	default:
		return tools.Tool{}, fmt.Errorf("method %q is not supported: use GET, POST, PUT, PATCH, DELETE or HEAD", ep.Method)
	}
	u, err := url.Parse(ep.URL)
	if err != nil {
		return tools.Tool{}, fmt.Errorf("url %q is invalid: %v", ep.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return tools.Tool{}, fmt.Errorf("url %q must start with http:// or https://", ep.URL)
	}
	if u.Host == "" || strings.ContainsAny(u.Host, "{}") || u.User != nil {
		return tools.Tool{}, fmt.Errorf("url %q must name a fixed host without user info: placeholders go in the path or query", ep.URL)
	}
	if u.Fragment != "" {
		return tools.Tool{}, fmt.Errorf("url %q must not have a fragment", ep.URL)
	}
	e.origin = u.Scheme + "://" + u.Host
	rest := ep.URL[strings.Index(ep.URL, "://")+3:]
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[i:]
	} else {
		rest = ""
	}
	e.pathTmpl, e.queryTmp, _ = strings.Cut(rest, "?")
	e.tracer, e.prop = tr.provider.Tracer(scopeName), tr.propagator
	e.spanName = e.method + " " + e.pathTmpl
	if e.pathTmpl == "" {
		e.spanName = e.method + " /"
	}
	e.host = u.Hostname()
	e.port, _ = strconv.Atoi(u.Port())
	if e.port == 0 {
		e.port = 80
		if u.Scheme == "https" {
			e.port = 443
		}
	}
	for h, env := range ep.HeadersFromEnv {
		if h == "" || strings.ContainsAny(h, " :\r\n") {
			return tools.Tool{}, fmt.Errorf("header name %q is invalid", h)
		}
		v, ok := lookup(env)
		if !ok {
			return tools.Tool{}, fmt.Errorf("environment variable %s (for header %s) is not set: set it before starting", env, h)
		}
		if strings.ContainsAny(v, "\r\n") {
			return tools.Tool{}, fmt.Errorf("environment variable %s (for header %s) holds a line break", env, h)
		}
		e.headers.Set(h, v)
	}
	if ep.MaxResponseBytes < 0 {
		return tools.Tool{}, errors.New("max_response_bytes is negative")
	}
	if e.MaxResponseBytes == 0 {
		e.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if ep.Timeout < 0 {
		return tools.Tool{}, errors.New("timeout is negative")
	}
	if e.Timeout == 0 {
		e.Timeout = DefaultTimeout
	}
	t := tools.Tool{
		Definition: tools.Definition{
			Name:         name,
			Description:  ep.Description,
			InputSchema:  ep.InputSchema,
			OutputSchema: ep.OutputSchema,
		},
		Handler: e.call,
	}
	if _, err := tools.Compile(t); err != nil {
		return tools.Tool{}, err
	}
	return policy.Wrap(t, ep.Policy), nil
}

// call runs one request.
func (e *endpoint) call(ctx context.Context, call tools.Call) (json.RawMessage, error) {
	args := map[string]any{}
	if len(call.Arguments) > 0 {
		dec := json.NewDecoder(bytes.NewReader(call.Arguments))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			return nil, tools.Errorf(tools.CodeInvalidArguments, "arguments of %s must be a JSON object", e.tool)
		}
	}
	req, err := e.request(ctx, args)
	if err != nil {
		return nil, err
	}
	if call.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", call.IdempotencyKey)
	}
	ctx, span := e.startSpan(ctx, req)
	out, status, err := e.do(ctx, req)
	endSpan(span, status, out, err)
	return out, err
}

// do sends one request and reads its answer.
func (e *endpoint) do(ctx context.Context, req *http.Request) (json.RawMessage, int, error) {
	rctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	status := 0
	resp, err := e.client.Do(req.WithContext(rctx))
	if err != nil {
		if ctx.Err() != nil {
			return nil, status, ctx.Err()
		}
		if rctx.Err() != nil {
			return nil, status, policy.MarkTransient(tools.Errorf(tools.CodeTimeout, "%s did not answer within %s", e.tool, e.Timeout))
		}
		return nil, status, policy.MarkTransient(&unreachableError{tool: e.tool, err: err})
	}
	defer resp.Body.Close()
	status = resp.StatusCode
	body, err := io.ReadAll(io.LimitReader(resp.Body, e.MaxResponseBytes+1))
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return nil, status, policy.MarkTransient(tools.Errorf(tools.CodeTimeout, "%s did not answer within %s", e.tool, e.Timeout))
		}
		return nil, status, policy.MarkTransient(&unreachableError{tool: e.tool, err: err})
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		terr := tools.Errorf("http_"+strconv.Itoa(resp.StatusCode), "%s answered %s: %s",
			e.tool, resp.Status, excerpt(body))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return nil, status, &policy.TransientError{Err: terr, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
		}
		return nil, status, terr
	}
	if int64(len(body)) > e.MaxResponseBytes {
		return nil, status, tools.Errorf(CodeResponseTooLarge, "%s answered more than %d bytes: ask for less (e.g. a smaller page)", e.tool, e.MaxResponseBytes)
	}
	return resultJSON(body), status, nil
}

// unreachableError is a network failure, reported to scripts with code
// CodeUnreachable and without the transport's details.
type unreachableError struct {
	tool string
	err  error
}

func (u *unreachableError) Error() string { return u.err.Error() }
func (u *unreachableError) Unwrap() []error {
	return []error{tools.Errorf(CodeUnreachable, "%s could not be reached: try again later", u.tool), u.err}
}

// request builds the HTTP request of one call.
func (e *endpoint) request(ctx context.Context, args map[string]any) (*http.Request, error) {
	used := map[string]bool{}
	fill := func(s string, escape func(string) string) (string, error) {
		var ferr error
		out := placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
			name := m[1 : len(m)-1]
			v, err := scalar(args, name)
			if err != nil && ferr == nil {
				ferr = tools.Errorf(tools.CodeInvalidArguments, "%s needs argument %q for its URL: %v", e.tool, name, err)
			}
			used[name] = true
			return escape(v)
		})
		return out, ferr
	}
	path, err := fill(e.pathTmpl, pathEscape)
	if err != nil {
		return nil, err
	}
	query, err := fill(e.queryTmp, url.QueryEscape)
	if err != nil {
		return nil, err
	}
	raw := e.origin + path
	if query != "" {
		raw += "?" + query
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, tools.Errorf(tools.CodeInvalidArguments, "%s: the URL built from the arguments is invalid", e.tool)
	}

	var body io.Reader
	hasBody := e.method != http.MethodGet && e.method != http.MethodHead && e.method != http.MethodDelete
	switch {
	case e.Body != nil:
		obj := make(map[string]any, len(e.Body))
		for field, arg := range e.Body {
			if v, ok := args[arg]; ok {
				obj[field] = v
			}
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, tools.Errorf(tools.CodeInvalidArguments, "%s: body is not JSON", e.tool)
		}
		body = bytes.NewReader(b)
	case hasBody:
		rest := map[string]any{}
		for k, v := range args {
			if !used[k] {
				rest[k] = v
			}
		}
		b, err := json.Marshal(rest)
		if err != nil {
			return nil, tools.Errorf(tools.CodeInvalidArguments, "%s: body is not JSON", e.tool)
		}
		body = bytes.NewReader(b)
	default:
		q := u.Query()
		keys := make([]string, 0, len(args))
		for k := range args {
			if !used[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch v := args[k].(type) {
			case []any:
				for _, item := range v {
					s, err := scalarValue(item)
					if err != nil {
						return nil, tools.Errorf(tools.CodeInvalidArguments, "%s: query argument %q: %v", e.tool, k, err)
					}
					q.Add(k, s)
				}
			default:
				s, err := scalarValue(v)
				if err != nil {
					return nil, tools.Errorf(tools.CodeInvalidArguments, "%s: query argument %q: %v", e.tool, k, err)
				}
				q.Add(k, s)
			}
		}
		if len(keys) > 0 {
			u.RawQuery = q.Encode()
		}
	}
	req, err := http.NewRequestWithContext(ctx, e.method, u.String(), body)
	if err != nil {
		return nil, tools.Errorf(tools.CodeInvalidArguments, "%s: cannot build the request: %v", e.tool, err)
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range e.headers {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// pathEscape escapes one path segment; "." and ".." are escaped too so an
// argument cannot climb out of the configured path.
func pathEscape(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}

func scalar(args map[string]any, name string) (string, error) {
	v, ok := args[name]
	if !ok {
		return "", errors.New("it is missing")
	}
	return scalarValue(v)
}

func scalarValue(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		return strconv.FormatBool(v), nil
	case nil:
		return "", errors.New("it is null: pass a string, number or boolean")
	default:
		return "", errors.New("it is not a string, number or boolean")
	}
}

// resultJSON returns body when it is JSON, else body as a JSON string
// (invalid UTF-8 replaced), and null for an empty body.
func resultJSON(body []byte) json.RawMessage {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(trimmed) {
		return json.RawMessage(trimmed)
	}
	b, _ := json.Marshal(strings.ToValidUTF8(string(body), "\uFFFD"))
	return b
}

// excerpt trims a body to MaxExcerptBytes of valid UTF-8 on one line.
func excerpt(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > MaxExcerptBytes {
		s = s[:MaxExcerptBytes]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// sameHostRedirects follows at most 10 redirects, none to another host or
// scheme: the redirect response itself is then the answer (an http_3xx
// error).
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
		return http.ErrUseLastResponse
	}
	return nil
}

// retryAfter parses a Retry-After header given in seconds.
func retryAfter(h string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(min(n, 3600)) * time.Second
}
