package bench

import (
	"context"
	"time"

	"github.com/reinception/rein/inception"
)

// delayedModule stands in for an inception model's time: a simulator, not
// a model, that waits d and then lets the wrapped module decide.
type delayedModule struct {
	inception.Module
	d time.Duration
}

func (m delayedModule) Detect(ctx context.Context, in inception.Input) (inception.Decision, error) {
	t := time.NewTimer(m.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return inception.Decision{}, ctx.Err()
	}
	return m.Module.Detect(ctx, in)
}

// NeedsContext passes the wrapped module's answer through.
func (m delayedModule) NeedsContext(in inception.Input) bool {
	cf, ok := m.Module.(inception.ContextFree)
	return !ok || cf.NeedsContext(in)
}
