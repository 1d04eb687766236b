package agentworker

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// CacheBytes is what the stage's state cache holds by its measure.
func CacheBytes(s *Stage) int64 { return s.cache.Bytes() }

// CacheLen is how many states the stage's cache holds.
func CacheLen(s *Stage) int { return s.cache.Len() }

// ChainLen reads a conversation's stored records and tells how many a
// cache miss decodes along their chain (ok false: it would decode all).
func ChainLen(ctx context.Context, js jetstream.JetStream, tenant, conv string) (decoded int, ok bool, err error) {
	var raws []streams.Raw
	subject := bus.ConversationStateSubject(bus.ConversationKey(tenant, conv))
	if err := streams.ReadSubjectRaw(ctx, js, bus.StreamConversations, subject, 0, 0, func(m streams.Raw) error {
		raws = append(raws, m)
		return nil
	}); err != nil {
		return 0, false, err
	}
	recs, _, ok, err := chain(raws)
	return len(recs), ok, err
}
