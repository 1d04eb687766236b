package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	reinlabels "github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/schemas"
)

// QualityPage is what labels.html shows and /api/labels answers: a
// tenant's review queue of one day and the detection quality measured
// from its labels (docs/labels.md).
type QualityPage struct {
	Tenant string `json:"tenant"`
	Day    string `json:"day"`
	// Queue is the day's queue; its user text is shown only to a request
	// that may see free text.
	Queue    []reinlabels.Queued `json:"queue"`
	Left     int                 `json:"left"` // queued turns not labelled yet
	Since    string              `json:"since"`
	SinceDay int                 `json:"since_days"`
	Report   reinlabels.Report   `json:"report"`
}

// defaultQualityDays is how far back the page measures by default.
const defaultQualityDays = 30

// Quality builds a tenant's labels page: the queue of day (zero:
// yesterday, the last whole day) and the figures of the last days.
func (d *Dashboard) Quality(ctx context.Context, tenant string, day time.Time, days int, reveal bool) (QualityPage, error) {
	p := QualityPage{Tenant: tenant}
	if !schemas.ValidID(tenant) {
		return p, fmt.Errorf("%w: tenant %q", schemas.ErrBadID, tenant)
	}
	now := d.now().UTC()
	if day.IsZero() {
		day = now.Truncate(24*time.Hour).AddDate(0, 0, -1)
	}
	q := d.cfg.LabelQueue
	q.Tenant, q.Day = tenant, day
	p.Day = day.Format(time.DateOnly)
	queue, err := reinlabels.Review(ctx, d.deps.JS, q, now)
	if err != nil {
		return p, err
	}
	for i := range queue {
		if !queue[i].Labelled {
			p.Left++
		}
		if !reveal {
			queue[i].UserText = redactText(queue[i].UserText)
		}
	}
	p.Queue = queue
	p.SinceDay = days
	since := now.Truncate(24*time.Hour).AddDate(0, 0, -days)
	p.Since = since.Format(time.DateOnly)
	ls, err := reinlabels.Read(ctx, d.deps.JS, reinlabels.Filter{Tenant: tenant, Since: since})
	if err != nil {
		return p, err
	}
	p.Report = reinlabels.Quality(ls)
	return p, nil
}

func (d *Dashboard) qualityStatus(r *http.Request) (QualityPage, int, error) {
	tenant := r.PathValue("tenant")
	var day time.Time
	if v := r.URL.Query().Get("day"); v != "" {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return QualityPage{Tenant: tenant}, http.StatusBadRequest, fmt.Errorf("%w: day %q: want YYYY-MM-DD", schemas.ErrBadID, v)
		}
		day = t
	}
	days := defaultQualityDays
	if v := r.URL.Query().Get("days"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3660 {
			return QualityPage{Tenant: tenant}, http.StatusBadRequest, fmt.Errorf("%w: days %q: want 1 to 3660", schemas.ErrBadID, v)
		}
		days = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), d.cfg.ReadTimeout)
	defer cancel()
	p, err := d.Quality(ctx, tenant, day, days, d.reveals(r))
	switch {
	case err == nil:
		return p, http.StatusOK, nil
	case errors.Is(err, schemas.ErrBadID), errors.Is(err, reinlabels.ErrBadLabel), errors.Is(err, reinlabels.ErrDayNotOver):
		return p, http.StatusBadRequest, err
	}
	d.log.Warn("labels view", "tenant", tenant, "err", err)
	return p, http.StatusInternalServerError, err
}

func (d *Dashboard) serveQuality(w http.ResponseWriter, r *http.Request) {
	p, status, err := d.qualityStatus(r)
	pg := page{Title: d.cfg.Title, Quality: &p, Status: status}
	if err != nil {
		pg.Error = err.Error()
	}
	d.render(w, "labels.html", pg)
}

func (d *Dashboard) serveQualityJSON(w http.ResponseWriter, r *http.Request) {
	p, status, err := d.qualityStatus(r)
	if err != nil {
		writeJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, status, p)
}
