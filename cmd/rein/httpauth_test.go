package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve on a fresh data dir needs no flag for HTTP authentication: it
// generates a local token (0600) that POST /v1/turns then requires.
func TestServeGeneratesTheLocalHTTPToken(t *testing.T) {
	dir := t.TempDir()
	natsAddr, httpAddr := freePort(t), freePort(t)
	stop := startServe(t, dir, natsAddr, httpAddr)
	defer stop()
	path := filepath.Join(dir, httpTokenFile)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("local token %s: %v (mode %v), want a 0600 file", path, err, st.Mode().Perm())
	}
	token, _ := os.ReadFile(path)
	post := func(auth string) int {
		r, _ := http.NewRequest(http.MethodPost, "http://"+httpAddr+"/v1/turns", strings.NewReader(`{"role":"user","text":"hello","turn":1}`))
		for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": "x", "ce-source": "/p", "ce-type": "dev.rein.turn.v1",
			"ce-tenant": "acme", "ce-conversation": "c1", "Content-Type": "application/json"} {
			r.Header.Set(k, v)
		}
		if auth != "" {
			r.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(""); code != http.StatusUnauthorized {
		t.Fatalf("POST without a token: %d, want 401", code)
	}
	if code := post(strings.TrimSpace(string(token))); code != http.StatusAccepted {
		t.Fatalf("POST with the local token: %d, want 202", code)
	}
}

// A non-loopback HTTP address without tokens is refused unless --insecure.
func TestServeRefusesAnExposedHTTPPortWithoutTokens(t *testing.T) {
	_, err := runCLI(t, context.Background(), "serve", "--data-dir", t.TempDir(), "--nats-listen", freePort(t), "--http", "0.0.0.0:0", "--log-level", "error")
	if err == nil || !strings.Contains(err.Error(), "--http-tokens") {
		t.Fatalf("serve --http 0.0.0.0:0: %v, want a refusal naming --http-tokens", err)
	}
}

// A size flag that does not parse is refused before serve writes anything
// (the local HTTP token was written first, and the error came after it).
func TestServeRefusesABadSizeBeforeWritingAnything(t *testing.T) {
	for _, flag := range []string{"--heap-goal", "--memory-limit"} {
		data := filepath.Join(t.TempDir(), "rein")
		_, err := runCLI(t, context.Background(), "serve", "--data-dir", data, "--nats-listen", freePort(t), "--http", freePort(t), "--log-level", "error", flag, "lots")
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Fatalf("serve %s lots: %v, want a refusal naming %s", flag, err, flag)
		}
		if entries, err := os.ReadDir(data); err == nil && len(entries) > 0 {
			t.Errorf("serve %s lots wrote %s before refusing", flag, entries[0].Name())
		}
	}
}
