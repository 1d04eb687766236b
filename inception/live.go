package inception

import (
	"context"
	"sync/atomic"
)

// Live is a module whose implementation can be replaced while it runs:
// how a promoted model takes over without a restart. Each turn is judged
// whole by the module in place when it started, so a turn in flight
// finishes with the old model, the next one starts with the new, and
// every decision's ModelVersion names the model that made it.
type Live struct {
	cur atomic.Pointer[liveModule]
}

// liveModule boxes a Module for the atomic pointer.
type liveModule struct{ m Module }

// NewLive holds m until Swap replaces it.
func NewLive(m Module) *Live {
	l := &Live{}
	l.Swap(m)
	return l
}

// Swap puts m in place for the turns that start from now on.
func (l *Live) Swap(m Module) { l.cur.Store(&liveModule{m: m}) }

// Current is the module in place.
func (l *Live) Current() Module { return l.cur.Load().m }

// Name implements Module: the name of the module in place.
func (l *Live) Name() string { return l.Current().Name() }

// Detect implements Module with the module in place.
func (l *Live) Detect(ctx context.Context, in Input) (Decision, error) {
	return l.Current().Detect(ctx, in)
}

// NeedsContext implements ContextFree with the module in place.
func (l *Live) NeedsContext(in Input) bool {
	cf, ok := l.Current().(ContextFree)
	return !ok || cf.NeedsContext(in)
}

// Current returns the module a Live holds now, m itself for any other.
func Current(m Module) Module {
	if l, ok := m.(*Live); ok {
		return l.Current()
	}
	return m
}
