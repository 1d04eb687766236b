package consume_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// readDLQ returns every dead letter stored so far.
func readDLQ(t *testing.T, h *rtest.JS) []schemas.DeadLetter {
	t.Helper()
	ctx := context.Background()
	s, err := h.JS.Stream(ctx, bus.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := s.Info(ctx)
	var out []schemas.DeadLetter
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		raw, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		d, err := decodeDLQ(raw.Header, raw.Data)
		if err != nil {
			t.Fatalf("dead letter %d: %v", seq, err)
		}
		out = append(out, d)
	}
	return out
}

func decodeDLQ(h map[string][]string, data []byte) (schemas.DeadLetter, error) {
	var dl schemas.DeadLetter
	if err := schemas.Validate(schemas.TypeDeadLetter, data); err != nil {
		return dl, err
	}
	if h["ce-type"][0] != schemas.TypeDeadLetter {
		return dl, fmt.Errorf("type %q is not a dead letter", h["ce-type"][0])
	}
	return dl, json.Unmarshal(data, &dl)
}
