package telemetry

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func listening(t *testing.T, l Limits) *Server {
	t.Helper()
	s := NewServer(prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	s.Limits = l
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

// A client that sends half a request header and stalls (slowloris) is
// disconnected by the header timeout; it once held its connection
// forever (1,000 such connections were kept open).
func TestSlowHeadersAreCutOff(t *testing.T) {
	s := listening(t, Limits{ReadHeaderTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	// The read deadline (25 times the header timeout) must not fire: the
	// server closes the stalled connection first.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn) // returns when the server closes the connection
	if err != nil {
		t.Fatalf("the server did not close the stalled connection: %v", err)
	}
}

// A loopback port answers only to loopback names (and configured ones):
// a rebinding page's own hostname gets 421.
func TestWrongHostIsMisdirected(t *testing.T) {
	s := listening(t, Limits{AllowedHosts: []string{"rein.internal"}})
	for host, want := range map[string]int{
		"127.0.0.1:1": http.StatusOK, "localhost": http.StatusOK, "[::1]:8080": http.StatusOK,
		"rein.internal:8080": http.StatusOK, "attacker.example": http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr()+"/healthz", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
