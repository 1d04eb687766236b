package telemetry

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A failing check keeps /readyz ready but says the process is degraded,
// naming what.
func TestReadyzReportsDegradations(t *testing.T) {
	s := NewServer(prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.SetReady(true, "")
	down := true
	s.AddCheck("model agent", func() error {
		if down {
			return errors.New("circuit open")
		}
		return nil
	})
	get := func() (int, map[string]any) {
		rec := httptest.NewRecorder()
		s.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		var body map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		return rec.Code, body
	}
	code, body := get()
	deg, _ := body["degraded"].(map[string]any)
	if code != http.StatusOK || body["status"] != "degraded" || deg["model agent"] != "circuit open" {
		t.Fatalf("readyz %d %v, want 200 degraded naming the model", code, body)
	}
	down = false
	if code, body := get(); code != http.StatusOK || body["status"] != "ready" {
		t.Fatalf("readyz %d %v after recovery", code, body)
	}
}

// Durations in the logs read as durations ("1.5s"), not nanoseconds.
func TestLogDurationsAreHuman(t *testing.T) {
	var b strings.Builder
	log, err := NewLogger(&b, "info")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("held", "for", 1500*time.Millisecond)
	if !strings.Contains(b.String(), `"for":"1.5s"`) {
		t.Fatalf("log line %s: want \"for\":\"1.5s\"", b.String())
	}
}

// A failing requirement takes the process out of service (503), naming
// it; it is ready again once the requirement holds.
func TestReadyzRequirement(t *testing.T) {
	s := NewServer(prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.SetReady(true, "")
	var down atomic.Bool
	down.Store(true)
	s.AddRequirement("streams", func() error {
		if down.Load() {
			return errors.New("REIN_TURNS has no leader")
		}
		return nil
	})
	get := func() (int, map[string]any) {
		rec := httptest.NewRecorder()
		s.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		var body map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		return rec.Code, body
	}
	code, body := get()
	failing, _ := body["failing"].(map[string]any)
	if code != http.StatusServiceUnavailable || failing["streams"] != "REIN_TURNS has no leader" {
		t.Fatalf("readyz %d %v, want 503 naming the streams", code, body)
	}
	down.Store(false)
	if code, body := get(); code != http.StatusOK || body["status"] != "ready" {
		t.Fatalf("readyz %d %v after recovery", code, body)
	}
}
