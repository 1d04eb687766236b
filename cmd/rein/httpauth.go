package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/streams/natsserver"
)

// httpTokenFile is where serve keeps the local token of POST /v1/turns
// when no --http-tokens file is given.
const httpTokenFile = "http-token"

// ingressTokens are the bearer tokens POST /v1/turns requires: those of
// --http-tokens, or else a local token for every tenant, generated into
// the data directory (0600) on first start, so that one machine stays one
// command: curl -H "Authorization: Bearer $(cat data/http-token)" …
func ingressTokens(f *serverFlags, log *slog.Logger) (*telemetry.Tokens, error) {
	if f.httpTokens != "" {
		b, err := os.ReadFile(f.httpTokens)
		if err != nil {
			return nil, fmt.Errorf("--http-tokens: %w", err)
		}
		var file struct {
			Tokens []telemetry.Token `yaml:"tokens"`
		}
		if err := yamlStrict(b, &file); err != nil {
			return nil, fmt.Errorf("--http-tokens %s: %w", f.httpTokens, err)
		}
		if len(file.Tokens) == 0 {
			return nil, fmt.Errorf("--http-tokens %s: no tokens", f.httpTokens)
		}
		t, err := telemetry.NewTokens(file.Tokens)
		if err != nil {
			return nil, fmt.Errorf("--http-tokens %s: %w", f.httpTokens, err)
		}
		return t, nil
	}
	path := filepath.Join(f.dataDir, httpTokenFile)
	token, err := natsserver.EnsureSecretFile(path, 32)
	if err != nil {
		return nil, fmt.Errorf("local HTTP token: %w", err)
	}
	log.Info("POST /v1/turns needs a bearer token; the local one is in "+path, "curl", `-H "Authorization: Bearer $(cat `+path+`)"`)
	return telemetry.NewTokens([]telemetry.Token{{Token: token, Tenants: []string{"*"}, Roles: telemetry.Roles}})
}

// checkHTTPExposure refuses to serve HTTP on a non-loopback address without
// a tokens file, unless --insecure says it is meant.
func checkHTTPExposure(f *serverFlags) error {
	if f.httpAddr == "" || f.httpTokens != "" || f.insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(f.httpAddr)
	if err != nil {
		return fmt.Errorf("--http %q: %w", f.httpAddr, err)
	}
	if natsserver.IsLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("refusing to serve HTTP on %s without --http-tokens (tokens bound to tenants); pass --insecure to do it anyway", f.httpAddr)
}
