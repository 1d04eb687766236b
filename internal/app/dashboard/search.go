package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Match is a conversation a search found.
type Match struct {
	Tenant       string `json:"tenant"`
	Conversation string `json:"conversation"`
	Turns        uint64 `json:"turns"` // messages stored in REIN_TURNS
	URL          string `json:"url"`
}

// maxMatches bounds the tenants a search lists for one conversation id.
const maxMatches = 50

// Search finds the conversations with id conv (in any tenant, or in the
// one given as "tenant/conv") from the subjects REIN_TURNS holds. It
// wraps schemas' id errors for a query that is not a valid id.
func (d *Dashboard) Search(ctx context.Context, query string) ([]Match, error) {
	query = strings.TrimSpace(query)
	tenant, conv, scoped := strings.Cut(query, "/")
	if !scoped {
		tenant, conv = "*", query
	} else if !schemas.ValidID(tenant) {
		return nil, fmt.Errorf("%w: tenant %q", schemas.ErrBadID, tenant)
	}
	if !schemas.ValidID(conv) {
		return nil, fmt.Errorf("%w: conversation %q: ids are 1 to 128 letters, digits, '_' or '-'", schemas.ErrBadID, conv)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.ReadTimeout)
	defer cancel()
	s, err := d.deps.JS.Stream(ctx, bus.StreamTurns)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(bus.ConversationTurns(tenant, conv)))
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	found := map[string]uint64{}
	for subj, n := range info.State.Subjects {
		// rein.turns.<tenant>.<conv>.<role>: the tenant is the token that
		// rebuilds the subject.
		subj = streams.Unpartitioned(subj)
		parts := strings.Split(subj, ".")
		if len(parts) != 5 {
			continue
		}
		if t := parts[2]; bus.TurnSubject(t, conv, parts[4]) == subj {
			found[t] += n
		}
	}
	var out []Match
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for t := range found {
			if !yield(t) {
				return
			}
		}
	}) {
		out = append(out, Match{Tenant: t, Conversation: conv, Turns: found[t], URL: conversationURL(t, conv)})
		if len(out) == maxMatches {
			break
		}
	}
	return out, nil
}

// serveSearch answers GET /search?q=<conversation id or tenant/id>: one
// match redirects to its timeline; several are listed; none is a 404 page
// saying so.
func (d *Dashboard) serveSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	matches, err := d.Search(r.Context(), q)
	p := page{Title: d.cfg.Title, Search: &searchPage{Query: q, Matches: matches}, Status: http.StatusOK}
	switch {
	case errors.Is(err, schemas.ErrBadID):
		p.Status, p.Error = http.StatusBadRequest, err.Error()
	case err != nil:
		d.log.Warn("search", "err", err)
		p.Status, p.Error = http.StatusInternalServerError, err.Error()
	case len(matches) == 1:
		http.Redirect(w, r, matches[0].URL, http.StatusSeeOther)
		return
	case len(matches) == 0:
		p.Status, p.Error = http.StatusNotFound, fmt.Sprintf("no conversation %q in %s", strings.TrimSpace(q), bus.StreamTurns)
	}
	d.render(w, "search.html", p)
}

// searchPage is what search.html shows.
type searchPage struct {
	Query   string
	Matches []Match
}
