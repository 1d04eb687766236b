package streams

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// FirstData returns the payload of the first message stored on subject at
// or after sequence from, without its headers; ok is false when there is
// none. The stream must allow direct gets and the connection use the
// default JetStream API prefix (rein's do: it sets no domain).
//
// It is the detector's probe for a conversation's earlier turns. A direct
// get of a stored event makes the server copy the event's CloudEvents
// headers into its answer one header at a time, and the client parse them
// back: kilobytes allocated per get, a fifth of all allocation behind slow
// models, where every turn is a conversation's first. Asked with no_hdr
// the answer is the payload alone (no sequence either: the server then
// leaves its own headers out too).
func FirstData(ctx context.Context, js jetstream.JetStream, stream, subject string, from uint64) (data []byte, ok bool, err error) {
	body, err := json.Marshal(directGet{Seq: max(from, 1), NextFor: subject, NoHeaders: true})
	if err != nil {
		return nil, false, fmt.Errorf("streams: first of %s %s: %w", stream, subject, err)
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, js.Options().DefaultTimeout)
		defer cancel()
	}
	m, err := js.Conn().RequestWithContext(ctx, jetstream.DefaultAPIPrefix+"DIRECT.GET."+stream, body)
	if err != nil {
		return nil, false, fmt.Errorf("streams: first of %s %s: %w", stream, subject, err)
	}
	// An answer with headers is a status: 404 when there is no such
	// message, anything else an error.
	if status := m.Header.Get(StatusHeader); status == "404" {
		return nil, false, nil
	} else if status != "" {
		return nil, false, fmt.Errorf("streams: first of %s %s: status %s %s", stream, subject, status, m.Header.Get(DescriptionHeader))
	}
	return m.Data, true, nil
}

// The headers of a server's status answer, a message with no payload
// (nats.go keeps its names unexported).
const (
	StatusHeader      = "Status"
	DescriptionHeader = "Description"
)

// directGet is the JetStream API's direct get request, as much of it as
// FirstData asks.
type directGet struct {
	Seq       uint64 `json:"seq,omitempty"`
	NextFor   string `json:"next_by_subj,omitempty"`
	NoHeaders bool   `json:"no_hdr,omitempty"`
}
