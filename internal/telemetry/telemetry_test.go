package telemetry_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
)

func TestServerReadinessAndMetrics(t *testing.T) {
	reg := telemetry.NewRegistry()
	c := telemetry.NewCounterVec(reg, telemetry.MPublished, "help", "stream")
	// A second registration of the same metric (another stage) reuses it.
	if again := telemetry.NewCounterVec(reg, telemetry.MPublished, "help", "stream"); again != c {
		t.Fatal("re-registration did not return the existing collector")
	}
	c.WithLabelValues("REIN_TURNS").Add(3)
	s := telemetry.NewServer(reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + s.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "starting") {
		t.Errorf("readyz before ready: %d %s", code, body)
	}
	s.SetReady(true, "")
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("readyz when ready: %d", code)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	if _, body := get("/metrics"); !strings.Contains(body, `rein_published_total{stream="REIN_TURNS"} 3`) || !strings.Contains(body, "go_goroutines") {
		t.Errorf("metrics body lacks series:\n%.400s", body)
	}
}

func TestRegisterPanicsOnConflictingMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	telemetry.NewCounterVec(reg, "rein_x_total", "help", "a")
	defer func() {
		if recover() == nil {
			t.Error("a different metric under the same name must panic (programming error)")
		}
	}()
	telemetry.NewCounterVec(reg, "rein_x_total", "help", "b")
}

func TestLoggerLevels(t *testing.T) {
	if _, err := telemetry.NewLogger(io.Discard, "loud"); err == nil {
		t.Error("unknown level accepted")
	}
	var b strings.Builder
	l, err := telemetry.NewLogger(&b, "warn")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown")
	if strings.Contains(b.String(), "hidden") || !strings.Contains(b.String(), `"msg":"shown"`) {
		t.Errorf("log output %q", b.String())
	}
}

// --log-format text writes key=value lines with human durations; json one
// object a line; anything else is refused.
func TestLogFormats(t *testing.T) {
	var b bytes.Buffer
	l, err := telemetry.NewLoggerFormat(&b, "info", "text")
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("hidden")
	l.Info("consumer started", "ack_wait", 1500*time.Millisecond)
	if got := b.String(); strings.Contains(got, "hidden") || !strings.Contains(got, `msg="consumer started"`) || !strings.Contains(got, "ack_wait=1.5s") {
		t.Errorf("text log %q", got)
	}
	b.Reset()
	l, _ = telemetry.NewLoggerFormat(&b, "info", "json")
	l.Info("x")
	if !strings.HasPrefix(b.String(), "{") {
		t.Errorf("json log %q", b.String())
	}
	if _, err := telemetry.NewLoggerFormat(&b, "info", "xml"); err == nil {
		t.Error("log format xml accepted")
	}
}
