package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
)

// The experiment page shows the holdout in force prominently (or that it
// was killed), both arms, each outcome with its intervals and always-valid
// p-value, and flags a guard metric that moved the wrong way.
func TestExperimentPage(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	convs := experiment.Simulate(experiment.SimConfig{Conversations: 2000, Holdout: 0.1, Activation: 0.3, FollowsPlans: true, Seed: 3})
	for i := range convs {
		if convs[i].Arm == schemas.ArmTreatment {
			convs[i].UserTurns += 3 // a guard moving the wrong way
		}
	}
	killed := false
	d, err := New(Config{}, Deps{JS: js.JS, Gatherer: prometheus.NewRegistry(),
		Experiments: func(_ context.Context, tenant, name string) (string, []experiment.Conversation, error) {
			if tenant != "acme" || (name != "" && name != "e1") {
				return "", nil, errors.New("no such experiment")
			}
			return "e1", convs, nil
		},
		Holdout: func(tenant string) (experiment.Tenant, bool) {
			return experiment.Tenant{Name: "e1", Holdout: 0.1, Killed: killed}, tenant == "acme"
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	d.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		path     string
		status   int
		contains []string
	}{
		{"/experiments/acme", 200, []string{`data-testid="holdout-fraction">10%<`, `data-testid="experiment-name">e1<`, `data-arm="control"`, `data-arm="treatment"`,
			`data-metric="resolved"`, `data-metric="recovery_tool"`, `data-flag="user_turns"`, `class="flagged" data-flag="worse"`, "always-valid 95%"}},
		{"/api/experiments/acme?min_effect=0.1", 200, []string{`"holdout":0.1`, `"experiment":"e1"`, `"min_effect":0.1`, `"p_always_valid"`, `"flagged":["user_turns"`}},
		{"/experiments/globex", 404, []string{"no such experiment"}},
		{"/api/experiments/acme?experiment=e9", 404, []string{"no such experiment"}},
		{"/experiments/bad%20id", 400, []string{"invalid identifier"}},
		{"/api/experiments/acme?min_effect=x", 400, []string{"min_effect"}},
	} {
		res, body := get(t, srv.URL+tc.path)
		if res.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.path, res.StatusCode, tc.status, body)
			continue
		}
		for _, s := range tc.contains {
			if !strings.Contains(body, s) {
				t.Errorf("%s: body lacks %q:\n%s", tc.path, s, body)
			}
		}
	}
	killed = true
	if _, body := get(t, srv.URL+"/experiments/acme"); !strings.Contains(body, "Holdout ended (kill switch)") {
		t.Errorf("killed experiment page:\n%s", body)
	}
}
