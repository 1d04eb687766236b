package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	reinlabels "github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/schemas"
)

// maxLabelForm bounds a label form's body.
const maxLabelForm = 16 << 10

// labelling reports whether r may label: the form is offered, and taken,
// only when the dashboard can store labels and Deps.CanLabel says so.
func (d *Dashboard) labelling(r *http.Request) bool {
	return d.deps.Publisher != nil && d.deps.CanLabel != nil && d.deps.CanLabel(r)
}

// serveLabel takes the conversation page's label form: POST
// /conversations/{tenant}/{conv}/labels, mounted behind the standard
// library's cross-origin protection (a browser's cross-site POST is
// refused whatever cookie it carries).
func (d *Dashboard) serveLabel(w http.ResponseWriter, r *http.Request) {
	tenant, conv := r.PathValue("tenant"), r.PathValue("conv")
	fail := func(status int, msg string) {
		c := Conversation{Tenant: tenant, Conversation: conv}
		d.render(w, "conversation.html", page{Title: d.cfg.Title, Conversation: &c, Status: status, Error: msg})
	}
	if !d.labelling(r) {
		fail(http.StatusForbidden, "labelling needs a token of the operator role")
		return
	}
	if err := schemas.CheckIDs(tenant, conv); err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLabelForm)
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "unreadable form: "+err.Error())
		return
	}
	turn, err := strconv.Atoi(r.PostFormValue("turn"))
	if err != nil {
		fail(http.StatusBadRequest, "turn: not a number")
		return
	}
	req := reinlabels.Request{Tenant: tenant, Conversation: conv, Turn: turn, Verdict: r.PostFormValue("verdict"),
		ErrorType: strings.TrimSpace(r.PostFormValue("type")), Labeller: strings.TrimSpace(r.PostFormValue("labeller")),
		Note: strings.TrimSpace(r.PostFormValue("note"))}
	ctx, cancel := context.WithTimeout(r.Context(), d.cfg.ReadTimeout)
	defer cancel()
	res, err := reinlabels.Put(ctx, d.deps.JS, d.deps.Publisher, req, d.cfg.LabelQueue, d.now())
	switch {
	case errors.Is(err, reinlabels.ErrBadLabel), errors.Is(err, reinlabels.ErrNoDetection):
		fail(http.StatusBadRequest, err.Error())
		return
	case err != nil:
		d.log.Warn("label not stored", "tenant", tenant, "conversation", conv, "turn", turn, "err", err)
		fail(http.StatusBadGateway, "the label was not stored: "+err.Error())
		return
	}
	q := url.Values{"labelled": {strconv.Itoa(turn)}}
	if res.Unchanged {
		q.Set("unchanged", "1")
	}
	http.Redirect(w, r, "/conversations/"+tenant+"/"+conv+"?"+q.Encode(), http.StatusSeeOther)
}

// labelEvent is a label's timeline entry.
func labelEvent(e *Event, l schemas.Label) {
	e.Kind, e.Label, e.Turn = "label", "label: "+l.Verdict, l.Turn
	add := func(name, value string) {
		if value != "" {
			e.Fields = append(e.Fields, Field{Name: name, Value: value})
		}
	}
	add("labeller", l.Labeller)
	add("right type", l.ErrorType)
	if l.Detected {
		add("rein said", l.DetectedType)
	} else {
		add("rein said", "clear")
	}
	if l.Sample != nil {
		add("review queue", l.Sample.Day+", "+l.Sample.Stratum+", π "+strconv.FormatFloat(l.Sample.Probability, 'g', 4, 64))
	} else {
		add("review queue", "no (not weighted)")
	}
	e.Text = l.Note
}
