package ingress_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/reinception/rein/streams/ingress"
)

// sentHeader is a binary-mode turn as a platform posts it.
func sentHeader() http.Header {
	return http.Header{
		"Ce-Specversion": {"1.0"}, "Ce-Id": {"m1"}, "Ce-Source": {"/platform"}, "Ce-Type": {"dev.rein.turn.v1"},
		"Ce-Tenant": {"acme"}, "Ce-Conversation": {"c1"}, "Ce-Turn": {"1"}, "Content-Type": {"application/json"},
		"Ce-Time": {"2026-05-01T10:00:00.123Z"}, "Ce-Subject": {"c1"}, "Ce-Partitionkey": {"c1"},
		"Ce-Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		"Authorization":  {"Bearer x"}, "User-Agent": {"platform/1"},
	}
}

// httpVariants are unusual and malformed versions of sentHeader.
var httpVariants = []struct {
	name string
	mut  func(h http.Header)
}{
	{"as sent", func(http.Header) {}},
	{"minimal", func(h http.Header) {
		for _, k := range []string{"Ce-Time", "Ce-Subject", "Ce-Partitionkey", "Ce-Traceparent", "Content-Type"} {
			delete(h, k)
		}
	}},
	{"padded id and type", func(h http.Header) { h["Ce-Id"] = []string{" m1 "}; h["Ce-Type"] = []string{"\tdev.rein.turn.v1 "} }},
	{"empty id", func(h http.Header) { h["Ce-Id"] = []string{""} }},
	{"no id", func(h http.Header) { delete(h, "Ce-Id") }},
	{"empty source", func(h http.Header) { h["Ce-Source"] = []string{""} }},
	{"bad source", func(h http.Header) { h["Ce-Source"] = []string{"%zz"} }},
	{"bad time", func(h http.Header) { h["Ce-Time"] = []string{"yesterday"} }},
	{"zero time", func(h http.Header) { h["Ce-Time"] = []string{"0001-01-01T00:00:00Z"} }},
	{"time with offset", func(h http.Header) { h["Ce-Time"] = []string{"2026-05-01T10:00:00.5+02:00"} }},
	{"blank subject", func(h http.Header) { h["Ce-Subject"] = []string{" "} }},
	{"content type with parameters", func(h http.Header) { h["Content-Type"] = []string{"application/json; charset=utf-8"} }},
	{"blank content type", func(h http.Header) { h["Content-Type"] = []string{" "} }},
	{"specversion 0.3", func(h http.Header) { h["Ce-Specversion"] = []string{"0.3"} }},
	{"specversion padded", func(h http.Header) { h["Ce-Specversion"] = []string{" 1.0"} }},
	{"two values", func(h http.Header) { h["Ce-Id"] = []string{"a", "b"}; h["Ce-Tenant"] = []string{"acme", "other"} }},
	{"other extension", func(h http.Header) { h["Ce-Foo"] = []string{"bar"} }},
	{"dataschema", func(h http.Header) { h["Ce-Dataschema"] = []string{"https://rein.dev/s"} }},
	{"datacontenttype header", func(h http.Header) { h["Ce-Datacontenttype"] = []string{"text/plain"} }},
	{"lower-case key", func(h http.Header) { h["ce-id"] = []string{"other"} }},
	{"upper-case key", func(h http.Header) { h["CE-TENANT"] = []string{"other"} }},
	{"empty extension", func(h http.Header) { h["Ce-Tenant"] = []string{""} }},
}

// checkHTTPEquivalence reads one request both ways; it returns whether
// the direct reader took it.
func checkHTTPEquivalence(t *testing.T, h http.Header, body []byte) bool {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/turns", bytes.NewReader(body))
	r.Header = h.Clone()
	want, wantErr := cehttp.NewEventFromHTTPRequest(r)
	got, ok := ingress.BinaryHTTPEvent(h.Clone(), body)
	switch {
	case ok && wantErr != nil:
		t.Fatalf("direct reader took what sdk-go refuses (%v): %v", wantErr, h)
	case ok && !reflect.DeepEqual(got, want):
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("events differ for %v\n got %s\nwant %s", h, g, w)
	}
	return ok
}

func TestBinaryHTTPEventMatchesSDK(t *testing.T) {
	for _, v := range httpVariants {
		for _, body := range []string{"", `{"role":"user","text":"cancel that one","turn":1}`} {
			h := sentHeader()
			v.mut(h)
			ok := checkHTTPEquivalence(t, h, []byte(body))
			if (v.name == "as sent" || v.name == "minimal") && !ok {
				t.Errorf("%s: the direct reader declined a platform's turn", v.name)
			}
		}
	}
}

func FuzzBinaryHTTPEvent(f *testing.F) {
	for _, v := range httpVariants {
		h := sentHeader()
		v.mut(h)
		f.Add(headerText(h), []byte(`{"role":"user","text":"hi","turn":1}`))
	}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		h := http.Header{}
		for _, line := range strings.Split(header, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				h[k] = append(h[k], v)
			}
		}
		checkHTTPEquivalence(t, h, body)
	})
}

// headerText writes h as lines "key:value", a key once per value.
func headerText(h http.Header) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range h[k] {
			b.WriteString(k + ":" + v + "\n")
		}
	}
	return b.String()
}
