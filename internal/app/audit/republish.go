package audit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// DefaultReplayStream stores republished events (subjects "<prefix>.>").
// It lies outside rein's live streams: no stage consumes it unless pointed
// at it on purpose.
const DefaultReplayStream = bus.StreamReplay

// republishBatch is how many asynchronous publishes are checked at once.
const republishBatch = 2048

// CheckPrefix refuses a republish prefix that is not a plain NATS subject
// (no wildcards, no empty tokens, no "$" system prefix) or that would land
// in rein's live namespace ("rein" or "rein.…").
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return fmt.Errorf("%w: empty prefix", ErrLivePrefix)
	}
	if strings.ContainsAny(prefix, "*> \t\r\n") || strings.HasPrefix(prefix, "$") {
		return fmt.Errorf("%w: %q is not a plain subject prefix", ErrLivePrefix, prefix)
	}
	for _, tok := range strings.Split(prefix, ".") {
		if tok == "" {
			return fmt.Errorf("%w: %q has an empty token", ErrLivePrefix, prefix)
		}
	}
	if first, _, _ := strings.Cut(prefix, "."); strings.EqualFold(first, "rein") {
		return fmt.Errorf("%w: %q starts with rein.; choose e.g. replay", ErrLivePrefix, prefix)
	}
	return nil
}

// Republisher copies records into a replay namespace: subject
// <prefix>.<original subject>, headers and body unchanged except
// Nats-Msg-Id, which becomes <prefix>:<original id> so a replay repeated
// within the stream's duplicate window is stored once.
type Republisher struct {
	js      jetstream.JetStream
	prefix  string
	stream  string
	pending []jetstream.PubAckFuture
	Written uint64
}

// NewRepublisher checks the prefix and creates (or extends) the replay
// stream so that it stores <prefix>.>.
func NewRepublisher(ctx context.Context, js jetstream.JetStream, prefix, stream string) (*Republisher, error) {
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	if stream == "" {
		stream = DefaultReplayStream
	}
	subj := prefix + ".>"
	s, err := js.Stream(ctx, stream)
	switch {
	case err == nil:
		info, err := s.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("replay stream %s: %w", stream, err)
		}
		cfg := info.Config
		has := false
		for _, x := range cfg.Subjects {
			has = has || x == subj
		}
		if !has {
			cfg.Subjects = append(cfg.Subjects, subj)
			if _, err := js.UpdateStream(ctx, cfg); err != nil {
				return nil, fmt.Errorf("replay stream %s: add %s: %w", stream, subj, err)
			}
		}
	case streams.IsNotFound(err):
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name: stream, Subjects: []string{subj}, Storage: jetstream.FileStorage,
			Retention: jetstream.LimitsPolicy, Duplicates: 2 * time.Minute, MaxBytes: -1,
			Description: "rein replay namespace (never consumed by live stages)",
		})
		if err != nil {
			return nil, fmt.Errorf("replay stream %s: %w", stream, err)
		}
	default:
		return nil, fmt.Errorf("replay stream %s: %w", stream, err)
	}
	return &Republisher{js: js, prefix: prefix, stream: stream}, nil
}

// Write republishes one record, asynchronously: at most republishBatch
// acknowledgements are outstanding, the oldest awaited first so the
// server is never left idle; Flush waits for the rest. It changes
// r.Header in place (each message read has its own).
func (p *Republisher) Write(r *Record) error {
	hdr := r.Header
	if hdr == nil {
		hdr = nats.Header{}
	}
	if id := hdr.Get(bus.HeaderMsgID); id != "" {
		hdr.Set(bus.HeaderMsgID, p.prefix+":"+id)
	}
	// Set rather than jetstream.WithExpectStream: the option costs an
	// allocation per publish and sets this same header.
	hdr.Set(bus.HeaderExpectedStream, p.stream)
	m := &nats.Msg{Subject: p.prefix + "." + r.Subject, Header: hdr, Data: r.Data}
	f, err := p.js.PublishMsgAsync(m)
	if err != nil {
		return fmt.Errorf("republish %s: %w", m.Subject, err)
	}
	p.pending = append(p.pending, f)
	if len(p.pending) >= republishBatch {
		return p.wait(context.Background(), republishBatch/2)
	}
	return nil
}

// Flush waits for every outstanding acknowledgement.
func (p *Republisher) Flush(ctx context.Context) error { return p.wait(ctx, len(p.pending)) }

// wait waits for the n oldest outstanding acknowledgements.
func (p *Republisher) wait(ctx context.Context, n int) error {
	var timeout <-chan time.Time
	for _, f := range p.pending[:n] {
		select {
		case <-f.Ok():
			p.Written++
			continue
		case err := <-f.Err():
			p.pending = p.pending[:0]
			return fmt.Errorf("republish %s: %w", f.Msg().Subject, err)
		default:
		}
		if timeout == nil {
			t := time.NewTimer(30 * time.Second)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-f.Ok():
			p.Written++
		case err := <-f.Err():
			p.pending = p.pending[:0]
			return fmt.Errorf("republish %s: %w", f.Msg().Subject, err)
		case <-ctx.Done():
			p.pending = p.pending[:0]
			return ctx.Err()
		case <-timeout:
			p.pending = p.pending[:0]
			return fmt.Errorf("republish %s: %w", f.Msg().Subject, nats.ErrTimeout)
		}
	}
	p.pending = append(p.pending[:0], p.pending[n:]...)
	return nil
}
