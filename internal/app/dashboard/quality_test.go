package dashboard

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	reinlabels "github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// The labels page shows a tenant's review queue of yesterday, what is
// left to label, and the quality measured from its labels; another
// tenant's turns and labels never show; free text only to a request that
// may see it.
func TestLabelsPageShowsQueueAndQuality(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	ctx := context.Background()
	pub := streams.NewPublisher(js.JS, nil, streams.PublisherConfig{})
	store := func(tenant, conv, typ string) {
		d := schemas.Detection{Turn: 1, UserText: "secret words of " + conv, Module: "rules", TaxonomyVersion: "1"}
		if typ != "" {
			d.Rein, d.ErrorType, d.Reasoning = true, typ, "r"
		}
		ev, err := schemas.NewEvent(schemas.TypeDetection, schemas.EventID("detection", tenant, conv, 1), "", schemas.Meta{Tenant: tenant, Conversation: conv, Turn: 1}, d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(ctx, bus.StreamDetections, bus.DetectionSubject(tenant, conv), &ev); err != nil {
			t.Fatal(err)
		}
	}
	store("acme", "a1", "anaphora")
	store("acme", "a2", "anaphora")
	store("acme", "c1", "")
	store("globex", "g1", "anaphora")
	tomorrow := time.Now().UTC().Truncate(24 * time.Hour).Add(26 * time.Hour)
	for _, r := range []reinlabels.Request{
		{Tenant: "acme", Conversation: "a1", Turn: 1, Verdict: schemas.VerdictCorrect, Labeller: "ann"},
		{Tenant: "acme", Conversation: "a2", Turn: 1, Verdict: schemas.VerdictFalseActivation, Labeller: "ann"},
		{Tenant: "globex", Conversation: "g1", Turn: 1, Verdict: schemas.VerdictCorrect, Labeller: "bob"},
	} {
		if _, err := reinlabels.Put(ctx, js.JS, pub, r, reinlabels.QueueConfig{}, tomorrow); err != nil {
			t.Fatal(err)
		}
	}
	reveal := false
	d, err := New(Config{}, Deps{JS: js.JS, Gatherer: prometheus.NewRegistry(), Reveal: func(*http.Request) bool { return reveal }})
	if err != nil {
		t.Fatal(err)
	}
	d.now = func() time.Time { return tomorrow }
	mux := http.NewServeMux()
	d.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// An operator reaches the page from the tenant's overview.
	_, overview := get(t, srv.URL+"/?tenant=acme")
	res, body := get(t, srv.URL+linkTo(t, overview, "review-queue-link"))
	if res.Request.URL.Path != "/labels/acme" || res.StatusCode != 200 {
		t.Fatalf("%s: status %d: %s", res.Request.URL, res.StatusCode, body)
	}
	for _, want := range []string{`data-testid="queue-left">1<`, `data-conversation="a1"`, `data-conversation="c1"`, `data-row="anaphora"`,
		`data-row="overall"`, "<td>0.500</td>", "[redacted: "} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	for _, leak := range []string{"g1", "secret words"} {
		if strings.Contains(body, leak) {
			t.Errorf("page shows %q", leak)
		}
	}
	reveal = true
	if _, body := get(t, srv.URL+"/api/labels/acme"); !strings.Contains(body, `"left":1`) || !strings.Contains(body, "secret words of c1") || strings.Contains(body, "g1") {
		t.Errorf("JSON: %s", body)
	}
	for path, status := range map[string]int{"/labels/bad%20id": 400, "/api/labels/acme?day=x": 400, "/api/labels/acme?days=0": 400} {
		if res, body := get(t, srv.URL+path); res.StatusCode != status {
			t.Errorf("%s: status %d, want %d: %s", path, res.StatusCode, status, body)
		}
	}
}

// linkTo is the href of the page's one link with data-testid testid.
func linkTo(t *testing.T, page, testid string) string {
	t.Helper()
	m := regexp.MustCompile(`<a href="([^"]*)" data-testid="`+regexp.QuoteMeta(testid)+`"`).FindAllStringSubmatch(page, -1)
	if len(m) != 1 {
		t.Fatalf("%d links %q, want one:\n%s", len(m), testid, page)
	}
	return html.UnescapeString(m[0][1])
}
