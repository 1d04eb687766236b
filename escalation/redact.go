package escalation

import (
	"net/url"
	"slices"
	"strings"
)

// redacted replaces credentials in log lines, errors and dead letters.
const redacted = "REDACTED"

// newRedactor returns a replacer that blanks every credential a webhook
// configuration holds wherever it appears in a message: the URL's query
// values and password (raw and escaped, as net/http quotes them), the
// static header values (Authorization and the like) and the signing
// secret.
func newRedactor(c WebhookConfig) *strings.Replacer {
	var secrets []string
	add := func(v string) {
		if len(v) >= 3 { // shorter values would blank unrelated text
			secrets = append(secrets, v)
		}
	}
	if u, err := url.Parse(c.URL); err == nil {
		if p, ok := u.User.Password(); ok {
			add(p)
			add(url.QueryEscape(p))
		}
		if u.RawQuery != "" {
			add(u.RawQuery) // covers a query that is not key=value
			for _, vs := range u.Query() {
				for _, v := range vs {
					add(v)
					add(url.QueryEscape(v))
				}
			}
		}
	}
	for _, v := range c.Headers {
		add(v)
		// "Bearer <token>": the token alone may surface too.
		if _, tok, ok := strings.Cut(v, " "); ok {
			add(tok)
		}
	}
	add(string(c.Secret))
	// Longest first, so a value containing another is replaced whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, redacted)
	}
	return strings.NewReplacer(pairs...)
}

// redactURL renders a URL with its password and query values blanked, for
// configuration errors (no configuration is trusted to be parseable).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			return raw[:i] + "?" + redacted
		}
		return raw
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{redacted}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
