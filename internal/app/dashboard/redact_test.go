package dashboard

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// By default the dashboard shows no customer's words and no tool result:
// the timeline keeps its shape (kinds, labels, tools, decisions) with the
// text replaced by its length, quotes in rein's own text blanked, and the
// recent outcomes' text redacted; a request Deps.Reveal allows sees all.
func TestDashboardRedactsFreeTextByDefault(t *testing.T) {
	f := newFixture(t)
	_, srv := f.serveWith(t, Config{}, func(r *http.Request) bool { return r.Header.Get("X-Operator") == "yes" })
	// page is a path's body, as an operator or not.
	page := func(path string, operator bool) string {
		t.Helper()
		r, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if operator {
			r.Header.Set("X-Operator", "yes")
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// fetch is a JSON path's body, re-marshalled (keys sorted, escapes
	// undone), so that the text searched for reads as written.
	fetch := func(path string, operator bool) string {
		t.Helper()
		var v map[string]any
		if err := json.Unmarshal([]byte(page(path, operator)), &v); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	conv := fetch("/api/conversations/acme/conv-1", false)
	for _, secret := range []string{"upgrade it", "pwned", "ABC123"} {
		if strings.Contains(conv, secret) {
			t.Errorf("the redacted conversation shows %q", secret)
		}
	}
	for _, kept := range []string{`"redacted":true`, "[redacted: ", `"kind":"user-turn"`, `"kind":"planted-thought"`, `"kind":"detection"`} {
		if !strings.Contains(conv, kept) {
			t.Errorf("the redacted conversation lacks %s", kept)
		}
	}
	if all := fetch("/api/conversations/acme/conv-1", true); !strings.Contains(all, "upgrade it") || strings.Contains(all, `"redacted":true`) {
		t.Error("an operator does not see the text")
	}
	if o := fetch("/api/overview", false); strings.Contains(o, "two flights") || !strings.Contains(o, "[redacted: ") {
		t.Errorf("the overview's recent outcomes are not redacted: %s", o)
	}
	if o := fetch("/api/overview", true); !strings.Contains(o, "two flights") {
		t.Error("an operator does not see the outcomes' text")
	}
	// The pages say why the text is hidden and how to see it; an
	// operator's pages do not.
	for _, path := range []string{"/", "/conversations/acme/conv-1"} {
		if p := page(path, false); !strings.Contains(p, `data-testid="redaction-note"`) || !strings.Contains(p, `href="/login"`) {
			t.Errorf("%s redacted without saying how to read it", path)
		}
		if p := page(path, true); strings.Contains(p, `data-testid="redaction-note"`) {
			t.Errorf("%s shows the redaction note to an operator", path)
		}
	}
}
