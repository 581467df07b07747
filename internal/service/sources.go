package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"time"

	"go.opentelemetry.io/otel/propagation"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/httpsource"
	"github.com/ptcrun/ptc/tools/mcp"
)

// Source is a started tool source: its current tools, a way to learn that
// they changed, and a way to stop it. *mcp.Source and *httpsource.Source
// implement it.
type Source interface {
	// Name is the source's name, the first segment of its tool names.
	Name() string
	// Tools returns a snapshot of the source's tools.
	Tools() []tools.Tool
	// OnChange registers a function called after the tool set changes.
	OnChange(fn func())
	// Close stops the source.
	Close() error
}

// startSources starts every tool source of c, resolving the environment
// variables the file names through lookupEnv (nil means os.LookupEnv). A
// required source that fails, or a variable that is not set, is an error
// (the sources started so far are closed); an optional MCP source that
// cannot connect starts unavailable. With tracing, every MCP call and
// HTTP request of the sources is a span of tr, and carries its W3C trace
// context to the server.
func startSources(ctx context.Context, c *config.Config, lookupEnv func(string) (string, bool), log *slog.Logger, tr telemetry.Tracing) ([]Source, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	var started []Source
	fail := func(err error) ([]Source, error) {
		for _, s := range started {
			_ = s.Close()
		}
		return nil, err
	}
	for i := range c.ToolSources {
		ts := &c.ToolSources[i]
		key := fmt.Sprintf("tool_sources[%d]", i)
		s, err := startSource(ctx, key, ts, lookupEnv, log, tr)
		if err != nil {
			if !ts.IsRequired() && ts.Type == config.TypeHTTP {
				if log != nil {
					log.Warn("tool source skipped", "source", ts.Name, "err", err)
				}
				continue
			}
			var ce *config.Error
			if errors.As(err, &ce) {
				return fail(err)
			}
			return fail(fmt.Errorf("tool source %s (%s): %w", ts.Name, key, err))
		}
		started = append(started, s)
	}
	return started, nil
}

// startSource starts the source whose keys start with key.
func startSource(ctx context.Context, key string, ts *config.ToolSource, lookupEnv func(string) (string, bool), log *slog.Logger, tr telemetry.Tracing) (Source, error) {
	// The tool sources fall back to OpenTelemetry's globals; ptcd sets
	// none, so without tracing they get explicit no-ops.
	provider, prop := tr.Provider, tr.Propagator
	if provider == nil {
		provider = tracenoop.NewTracerProvider()
	}
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator()
	}
	switch ts.Type {
	case config.TypeMCPStdio, config.TypeMCPHTTP:
		env, err := ts.ResolveEnv(key, lookupEnv)
		if err != nil {
			return nil, err
		}
		headers, err := ts.ResolveHeaders(key, lookupEnv)
		if err != nil {
			return nil, err
		}
		cfg := mcp.Config{
			Name:           ts.Name,
			Command:        ts.Command,
			Args:           ts.Args,
			Dir:            ts.Dir,
			Env:            env,
			URL:            ts.URL,
			Headers:        headers,
			Required:       ts.IsRequired(),
			Allow:          ts.Allow,
			Deny:           ts.Deny,
			Policy:         ts.Policy.Config(),
			ConnectTimeout: time.Duration(ts.ConnectTimeout),
			Logger:         log,
			TracerProvider: provider,
			Propagator:     prop,
			Approval:       ts.Approval,
		}
		return mcp.Start(ctx, cfg)
	case config.TypeHTTP:
		cfg := httpsource.Config{Name: ts.Name, LookupEnv: lookupEnv, TracerProvider: provider, Propagator: prop}
		for _, t := range ts.Tools {
			ep, err := endpoint(t, ts)
			if err != nil {
				return nil, err
			}
			cfg.Endpoints = append(cfg.Endpoints, ep)
		}
		return httpsource.New(cfg)
	}
	return nil, fmt.Errorf("type %q is unknown", ts.Type)
}

// endpoint converts an http tool, merging the source's headers and policy.
func endpoint(t config.HTTPTool, ts *config.ToolSource) (httpsource.Endpoint, error) {
	ep := httpsource.Endpoint{
		Name:             t.Name,
		Description:      t.Description,
		Method:           t.Method,
		URL:              t.URL,
		Body:             t.Body,
		MaxResponseBytes: int64(t.MaxResponseBytes),
		Timeout:          time.Duration(t.Timeout),
		Policy:           ts.Policy.Config(),
	}
	if t.Policy != nil {
		ep.Policy = t.Policy.Config()
	}
	if ep.Timeout == 0 {
		ep.Timeout = ep.Policy.Timeout
	}
	if len(ts.HeadersFromEnv) > 0 || len(t.HeadersFromEnv) > 0 {
		ep.HeadersFromEnv = maps.Clone(ts.HeadersFromEnv)
		if ep.HeadersFromEnv == nil {
			ep.HeadersFromEnv = map[string]string{}
		}
		maps.Copy(ep.HeadersFromEnv, t.HeadersFromEnv)
	}
	var err error
	ep.InputSchema, ep.OutputSchema, err = t.Schemas()
	return ep, err
}

// The sources startSources starts.
var (
	_ Source = (*mcp.Source)(nil)
	_ Source = (*httpsource.Source)(nil)
)
