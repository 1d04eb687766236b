package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// Tracing: each stage's handling of a turn is a span, linked to the
// previous stage's through the CloudEvents traceparent extension rein's
// events carry (streams sets it from the span that publishes them), with
// model and tool calls as child spans. Off by default: the global tracer
// is OpenTelemetry's no-op until SetupTracing finds an OTLP endpoint.

// TracerName names rein's tracer.
const TracerName = "github.com/reinception/rein"

// Tracer is rein's tracer from the global provider.
func Tracer() trace.Tracer { return reinTracer{} }

// unsetProvider is the global provider before anyone sets one. Its tracers
// start non-recording spans, yet each Start allocates the span and a
// context for it: two of them per message with tracing off.
var unsetProvider = otel.GetTracerProvider()

// reinTracer starts spans from whichever global provider is set when Start
// is called (as otel.Tracer's does), and no span at all while none is set
// and ctx carries no span context: that span would record nothing and
// carry nothing on (TraceparentOf reads "" either way).
type reinTracer struct{ embedded.Tracer }

func (reinTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return startSpan(otel.GetTracerProvider(), ctx, name, opts...)
}

// startSpan is reinTracer's Start with the global provider passed in.
func startSpan(tp trace.TracerProvider, ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if tp == unsetProvider && !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tp.Tracer(TracerName).Start(ctx, name, opts...)
}

// Span attribute keys rein sets (bounded values: ids, not text).
var (
	AttrTenant       = attribute.Key("rein.tenant")
	AttrConversation = attribute.Key("rein.conversation")
	AttrTurn         = attribute.Key("rein.turn")
	AttrStage        = attribute.Key("rein.stage")
)

// TracingEnabled reports whether the standard OpenTelemetry environment
// asks for traces: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), the SDK not disabled and the traces
// exporter not "none".
func TracingEnabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// SetupTracing installs an OTLP/HTTP exporter as the global tracer
// provider when TracingEnabled (the exporter reads the other OTEL_*
// variables itself: headers, protocol details, timeouts), and the W3C
// trace-context propagator either way. The returned func flushes and stops
// the exporter; with tracing off it does nothing.
func SetupTracing(ctx context.Context, service string) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if !TracingEnabled() {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		_ = os.Setenv("OTEL_SERVICE_NAME", service)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// ContextWithTraceparent returns ctx carrying the remote span context of a
// W3C traceparent value (unchanged when it is empty or invalid).
func ContextWithTraceparent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// TraceparentOf is the W3C traceparent of ctx's span ("" when ctx has no
// valid span, as with tracing off).
func TraceparentOf(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}
