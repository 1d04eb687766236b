package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	reinlabels "github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// operatorHeader stands in for a token of the operator role.
const operatorHeader = "X-Test-Operator"

func (f *fixture) serveLabelling(t *testing.T) *httptest.Server {
	t.Helper()
	d, err := New(Config{}, Deps{JS: f.js.JS, Gatherer: f.reg, Reveal: func(*http.Request) bool { return true },
		CanLabel: func(r *http.Request) bool { return r.Header.Get(operatorHeader) == "yes" }, Publisher: f.pub})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(f.reg, promhttp.HandlerOpts{}))
	d.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// send makes a request, not following redirects.
func send(t *testing.T, method, target string, form url.Values, header map[string]string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// An operator labels a turn from the conversation page: the form is on
// each detection (with the verdicts that fit it), the label is stored
// with what the detection said, and the page then shows it.
func TestLabelFormStoresALabel(t *testing.T) {
	f := newFixture(t)
	srv := f.serveLabelling(t)
	page := srv.URL + "/conversations/acme/conv-1"
	op := map[string]string{operatorHeader: "yes"}
	if _, body := send(t, http.MethodGet, page, nil, nil); strings.Contains(body, `data-testid="label-form"`) || strings.Contains(body, `data-testid="review-queue-link"`) {
		t.Fatal("the label form or its review-queue link is offered without the operator role")
	}
	_, body := send(t, http.MethodGet, page, nil, op)
	if n := strings.Count(body, `data-testid="label-form"`); n != 2 {
		t.Fatalf("%d label forms, want one per detection:\n%s", n, body)
	}
	// Next to the forms, a link to the tenant's review queue.
	queue := linkTo(t, body, "review-queue-link")
	if res, qbody := send(t, http.MethodGet, srv.URL+queue, nil, op); res.StatusCode != http.StatusOK || !strings.Contains(qbody, `data-testid="labels-tenant">acme<`) {
		t.Errorf("the review-queue link %q: %d:\n%s", queue, res.StatusCode, qbody)
	}
	if !strings.Contains(body, `value="missed_error"`) || !strings.Contains(body, `value="wrong_type"`) {
		t.Error("the forms lack the verdicts of a clear and an activated turn")
	}
	form := url.Values{"turn": {"2"}, "verdict": {"wrong_type"}, "type": {"unsupported_action"}, "labeller": {"ann"}, "note": {"a seat, not a cabin"}}
	res, _ := send(t, http.MethodPost, page+"/labels", form, map[string]string{operatorHeader: "yes", "Sec-Fetch-Site": "same-origin"})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/conversations/acme/conv-1?labelled=2" {
		t.Fatalf("POST: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	ls, err := reinlabels.Read(context.Background(), f.js.JS, reinlabels.Filter{Tenant: "acme"})
	if err != nil || len(ls) != 1 {
		t.Fatalf("labels %+v, %v", ls, err)
	}
	if l := ls[0].Label; l.Verdict != schemas.VerdictWrongType || l.ErrorType != "unsupported_action" || l.DetectedType != "unsupported_parameter" || l.Labeller != "ann" {
		t.Errorf("label %+v", l)
	}
	_, body = send(t, http.MethodGet, page+"?labelled=2", nil, op)
	for _, want := range []string{`data-testid="labelled"`, "label: wrong_type", "a seat, not a cabin", `data-kind="label"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page after labelling lacks %q", want)
		}
	}
}

// The form is refused to a cross-site page (whatever cookie the browser
// sends), to a request without the operator role, and with a verdict that
// does not fit; nothing is stored. Another tenant's label of a
// conversation with the same id never shows.
func TestLabelFormRefusals(t *testing.T) {
	f := newFixture(t)
	srv := f.serveLabelling(t)
	page := srv.URL + "/conversations/acme/conv-1"
	form := url.Values{"turn": {"1"}, "verdict": {"correct"}, "labeller": {"ann"}}
	cases := []struct {
		name   string
		form   url.Values
		header map[string]string
		status int
	}{
		{"cross-site", form, map[string]string{operatorHeader: "yes", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"foreign origin", form, map[string]string{operatorHeader: "yes", "Origin": "http://evil.example"}, http.StatusForbidden},
		{"no operator role", form, map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusForbidden},
		{"missed error on an activated turn", url.Values{"turn": {"2"}, "verdict": {"missed_error"}, "type": {"anaphora"}, "labeller": {"ann"}},
			map[string]string{operatorHeader: "yes"}, http.StatusBadRequest},
		{"no such turn", url.Values{"turn": {"9"}, "verdict": {"correct"}, "labeller": {"ann"}}, map[string]string{operatorHeader: "yes"}, http.StatusBadRequest},
	}
	for _, c := range cases {
		if res, _ := send(t, http.MethodPost, page+"/labels", c.form, c.header); res.StatusCode != c.status {
			t.Errorf("%s: %d, want %d", c.name, res.StatusCode, c.status)
		}
	}
	if n := f.js.StreamMsgs(t, bus.StreamLabels); n != 0 {
		t.Fatalf("refused forms stored %d labels", n)
	}
	l := schemas.Label{Turn: 1, Verdict: schemas.VerdictCorrect, Labeller: "globex-ops", DetectionID: "d"}
	f.publish(context.Background(), t, bus.StreamLabels, bus.LabelSubject("globex", conv, 1, l.Labeller), schemas.TypeLabel,
		schemas.LabelMsgID("globex", conv, 1, l), schemas.Meta{Tenant: "globex", Conversation: conv, Turn: 1}, l)
	if _, body := send(t, http.MethodGet, page, nil, nil); strings.Contains(body, "globex-ops") || strings.Contains(body, `data-kind="label"`) {
		t.Error("acme's conversation shows globex's label")
	}
}
