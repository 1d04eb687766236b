package audit

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// A conversation's timeline shows its labels, in words, and never a label
// of another tenant's conversation of the same id.
func TestTimelineShowsItsTenantsLabels(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	outs := demoConversation(t)
	lab := func(tenant string, l schemas.Label, s int) streams.Out {
		return ev(t, bus.StreamLabels, bus.LabelSubject(tenant, "demo1", l.Turn, l.Labeller), schemas.TypeLabel,
			schemas.LabelMsgID(tenant, "demo1", l.Turn, l), schemas.Meta{Tenant: tenant, Conversation: "demo1", Turn: l.Turn}, t0.Add(time.Duration(60+s)*time.Second), l)
	}
	outs = append(outs,
		lab("acme", schemas.Label{Turn: 2, Verdict: schemas.VerdictWrongType, ErrorType: "unsupported_action", Labeller: "ann",
			DetectionID: "detection.acme.demo1.2", Detected: true, DetectedType: "unsupported_domain", Note: "a seat request",
			Sample: &schemas.LabelSample{Day: "2026-12-01", Stratum: "unsupported_domain", Population: 4, Probability: 1}}, 0),
		lab("globex", schemas.Label{Turn: 2, Verdict: schemas.VerdictCorrect, Labeller: "mallory", DetectionID: "detection.globex.demo1.2"}, 1))
	publish(t, js, outs...)
	es, err := Timeline(context.Background(), js.JS, "acme", "demo1")
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, e := range es {
		if e.Type != schemas.TypeLabel {
			continue
		}
		found++
		if e.Kind != KindLabel || !strings.Contains(e.Text, "wrong_type (unsupported_action) by ann of unsupported_domain; review queue 2026-12-01") ||
			!strings.Contains(e.Text, "a seat request") || e.Turn != 2 {
			t.Errorf("label entry %+v", e)
		}
	}
	if found != 1 {
		t.Fatalf("%d label entries, want acme's one", found)
	}
	var buf bytes.Buffer
	if err := WriteTimeline(&buf, "acme", "demo1", es); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "mallory") || !strings.Contains(buf.String(), "LABEL") {
		t.Errorf("timeline text:\n%s", buf.String())
	}
}
