package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// A 400 MB answer (streamed, no length announced) is refused once the
// limit is passed, and the process never holds it.
func TestAHugeModelResponseIsRejectedWithBoundedMemory(t *testing.T) {
	chunk := strings.Repeat("a", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`)
		for i := 0; i < 400; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				return // the client stopped reading
			}
		}
		_, _ = io.WriteString(w, `"}}]}`)
	}))
	defer srv.Close()
	cfg := openAIConfig(srv.URL)
	cfg.MaxRetries = -1
	c, _ := newClient(t, cfg)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.Chat(context.Background(), Request{Purpose: PurposeAgent, Messages: []Message{userMsg("hi")}})
	if !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("err %v, want ErrResponseTooLarge", err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.TotalAlloc - before.TotalAlloc); grew > 128<<20 {
		t.Fatalf("the call allocated %d MB reading a 400 MB body; it should stop near the 8 MiB limit", grew>>20)
	}
}
