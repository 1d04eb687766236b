package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// With no provider set, a span under a context without a span context is
// not started: nothing allocated, the context handed back as it came, and
// nothing to carry on.
func TestNoSpanWithoutAProviderOrAParent(t *testing.T) {
	if otel.GetTracerProvider() != unsetProvider {
		t.Skip("a global tracer provider is set in this test binary")
	}
	ctx := context.Background()
	got, span := Tracer().Start(ctx, "rein.test")
	if got != ctx || span.SpanContext().IsValid() || span.IsRecording() {
		t.Errorf("context changed %v, span %+v", got != ctx, span.SpanContext())
	}
	span.End()
	if TraceparentOf(got) != "" {
		t.Errorf("traceparent %q", TraceparentOf(got))
	}
	if n := testing.AllocsPerRun(100, func() {
		_, s := Tracer().Start(ctx, "rein.test")
		s.End()
	}); n != 0 {
		t.Errorf("%v allocations per span with tracing off, want 0", n)
	}
}

// A traceparent that came with the event is carried on with tracing off,
// as the global no-op tracer carries it: the next stage's events keep it.
func TestTraceparentCarriedOnWithoutAProvider(t *testing.T) {
	if otel.GetTracerProvider() != unsetProvider {
		t.Skip("a global tracer provider is set in this test binary")
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx, span := Tracer().Start(ContextWithTraceparent(context.Background(), tp), "rein.test")
	defer span.End()
	if got := TraceparentOf(ctx); got != tp {
		t.Errorf("traceparent %q, want %q", got, tp)
	}
}

// With a provider set, every span is started from it, parent or not.
func TestSpansFromTheProviderSet(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, span := startSpan(tp, context.Background(), "rein.test")
	if !span.IsRecording() || !trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatalf("span %+v not recording", span.SpanContext())
	}
	span.End()
	if got := exp.GetSpans(); len(got) != 1 || got[0].Name != "rein.test" || got[0].InstrumentationScope.Name != TracerName {
		t.Errorf("spans %+v", got)
	}
}
