package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/schemas"
)

// ExperimentReader reads one tenant's experiment from the streams (name
// "" for its latest), as audit.ExperimentConversations does; the pipeline
// wires it.
type ExperimentReader func(ctx context.Context, tenant, name string) (string, []experiment.Conversation, error)

// ExperimentPage is what experiment.html shows and /api/experiments
// answers: the holdout in force (from the experiments file this process
// runs with, when it runs the detector) and the report.
type ExperimentPage struct {
	Tenant string `json:"tenant"`
	// Configured: this process's experiments file names the tenant;
	// Holdout and Killed are then what it says.
	Configured bool              `json:"configured"`
	Holdout    float64           `json:"holdout"`
	Killed     bool              `json:"killed"`
	Report     experiment.Report `json:"report"`
	// Flagged names the guard metrics that moved the wrong way.
	Flagged []string `json:"flagged,omitempty"`
}

// HoldoutPercent is the holdout in force, in percent, for the banner.
func (p ExperimentPage) HoldoutPercent() string {
	return strconv.FormatFloat(100*p.Holdout, 'f', -1, 64) + "%"
}

// Experiment builds a tenant's experiment page.
func (d *Dashboard) Experiment(ctx context.Context, tenant, name string, o experiment.Options) (ExperimentPage, error) {
	p := ExperimentPage{Tenant: tenant}
	if !schemas.ValidID(tenant) || (name != "" && !schemas.ValidID(name)) {
		return p, fmt.Errorf("%w: tenant %q or experiment %q", schemas.ErrBadID, tenant, name)
	}
	if d.deps.Experiments == nil {
		return p, fmt.Errorf("%w: this process reads no experiments", ErrNotFound)
	}
	if d.deps.Holdout != nil {
		if t, ok := d.deps.Holdout(tenant); ok {
			p.Configured, p.Holdout, p.Killed = true, t.Holdout, t.Killed
			if name == "" {
				name = t.Name
			}
			if o.Holdout == 0 {
				o.Holdout = t.Holdout
			}
		}
	}
	name, convs, err := d.deps.Experiments(ctx, tenant, name)
	if err != nil {
		return p, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	p.Report = experiment.Analyze(tenant, name, convs, o)
	if !p.Configured {
		p.Holdout = p.Report.Holdout
	}
	for _, m := range append(p.Report.Activated, p.Report.All...) {
		if m.Flag != "" {
			p.Flagged = append(p.Flagged, m.Name)
		}
	}
	return p, nil
}

// experimentQuery reads ?experiment= and ?min_effect=.
func experimentQuery(r *http.Request) (string, experiment.Options, error) {
	var o experiment.Options
	if v := r.URL.Query().Get("min_effect"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 100 {
			return "", o, fmt.Errorf("%w: min_effect %q", schemas.ErrBadID, v)
		}
		o.MinEffect = f
	}
	return r.URL.Query().Get("experiment"), o, nil
}

func (d *Dashboard) experimentStatus(r *http.Request) (ExperimentPage, int, error) {
	name, o, err := experimentQuery(r)
	if err != nil {
		return ExperimentPage{Tenant: r.PathValue("tenant")}, http.StatusBadRequest, err
	}
	p, err := d.Experiment(r.Context(), r.PathValue("tenant"), name, o)
	switch {
	case err == nil:
		return p, http.StatusOK, nil
	case errors.Is(err, schemas.ErrBadID):
		return p, http.StatusBadRequest, err
	case errors.Is(err, ErrNotFound):
		return p, http.StatusNotFound, err
	}
	d.log.Warn("experiment view", "tenant", p.Tenant, "err", err)
	return p, http.StatusInternalServerError, err
}

func (d *Dashboard) serveExperiment(w http.ResponseWriter, r *http.Request) {
	p, status, err := d.experimentStatus(r)
	pg := page{Title: d.cfg.Title, Experiment: &p, Status: status}
	if err != nil {
		pg.Error = err.Error()
	}
	d.render(w, "experiment.html", pg)
}

func (d *Dashboard) serveExperimentJSON(w http.ResponseWriter, r *http.Request) {
	p, status, err := d.experimentStatus(r)
	if err != nil {
		writeJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, status, p)
}
