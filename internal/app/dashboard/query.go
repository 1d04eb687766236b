package dashboard

import (
	"fmt"
	"net/url"
	"time"
)

// overviewQuery is q as a query string ("" for the default overview).
func overviewQuery(q Query) string {
	v := url.Values{}
	if q.Window != "" && q.Window != WindowAll {
		v.Set("window", q.Window)
	}
	if q.Tenant != "" {
		v.Set("tenant", q.Tenant)
	}
	if q.ErrorType != "" {
		v.Set("type", q.ErrorType)
	}
	if q.Outcome != "" {
		v.Set("outcome", q.Outcome)
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// overviewURL is the overview page of q.
func overviewURL(q Query) string { return "/" + overviewQuery(q) }

// windowLinks are the window selector's choices, keeping the filters.
func windowLinks(q Query) []WindowLink {
	out := make([]WindowLink, 0, len(Windows))
	for _, w := range Windows {
		out = append(out, WindowLink{Name: w.Name, Text: w.Text, URL: overviewURL(Query{Window: w.Name, Tenant: q.Tenant, ErrorType: q.ErrorType}),
			Current: w.Name == q.Window || (q.Window == "" && w.Name == WindowAll)})
	}
	return out
}

// coverage says what span the numbers cover.
func coverage(w Window, from, now, started time.Time) string {
	since := fmt.Sprintf("%s (%s ago)", timeText(started), now.Sub(started).Round(time.Second))
	switch {
	case w.Span == 0:
		return "since rein started at " + since
	case from.Equal(started):
		return w.Text + ": only since rein started at " + since
	}
	return w.Text + ", from " + timeText(from)
}
