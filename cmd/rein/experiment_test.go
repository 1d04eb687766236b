package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/internal/experiment"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// TestExperimentServeEndToEnd: serve --experiments judges both arms
// alike, plants only in treatment, takes feedback, reports per arm, and
// the kill switch plants for everyone without a restart.
func TestExperimentServeEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := "end-to-end-experiment-key"
	if err := os.WriteFile(filepath.Join(dir, "exp.key"), []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "experiments.yaml")
	write := func(killed bool) {
		body := fmt.Sprintf("key_file: exp.key\ntenants:\n  acme: {name: e1, holdout: 0.5, killed: %v}\n", killed)
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(false)
	arms := map[string]string{} // arm -> a conversation in it
	for i := 0; len(arms) < 2; i++ {
		c := fmt.Sprintf("conv%d", i)
		a := experiment.Assign([]byte(key), "acme", c, experiment.Tenant{Name: "e1", Holdout: 0.5})
		if _, ok := arms[a.Arm]; !ok {
			arms[a.Arm] = c
		}
	}
	ctl, trt := arms[schemas.ArmControl], arms[schemas.ArmTreatment]

	data := filepath.Join(dir, "data")
	natsAddr, httpAddr := freePort(t), freePort(t)
	url := "nats://" + natsAddr
	stop := startServe(t, data, natsAddr, httpAddr, "--stages", "detector,injector", "--experiments", file)
	defer stop()
	token, err := os.ReadFile(filepath.Join(data, httpTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	post := func(path, typ, conv string, turn int, body string) int {
		t.Helper()
		r, _ := http.NewRequest(http.MethodPost, "http://"+httpAddr+path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		for k, v := range map[string]string{"specversion": "1.0", "id": fmt.Sprintf("%s-%d", conv, turn), "source": "/platform", "type": typ,
			"tenant": "acme", "conversation": conv} {
			r.Header.Set("ce-"+k, v)
		}
		if turn > 0 {
			r.Header.Set("ce-turn", fmt.Sprint(turn))
		}
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	hotel := `{"role":"user","text":"Can you also book me a hotel in Paris?"}`
	for _, c := range []string{ctl, trt} {
		if code := post("/v1/turns", schemas.TypeTurn, c, 1, hotel); code != http.StatusAccepted {
			t.Fatalf("turn of %s: %d", c, code)
		}
	}
	nc, js, err := connectJS(&natsFlags{url: url, dataDir: data}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tasks := func() map[string]schemas.Task {
		out := map[string]schemas.Task{}
		err := streams.ReadStream(ctx, js, bus.StreamTasks, streams.ReadOptions{}, func(r streams.Raw) error {
			var task schemas.Task
			if r.Decoded != nil && r.Decoded.Payload(&task) == nil {
				out[r.Decoded.Event.ID()] = task
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	id := func(c string, turn int) string { return schemas.EventID("task", "acme", c, turn) }
	rtest.CheckFor(t, time.Minute, "both tasks", func() bool { return len(tasks()) == 2 })
	got := tasks()
	if got[id(ctl, 1)].Inception != nil || got[id(trt, 1)].Inception == nil {
		t.Fatalf("control planted %+v, treatment %+v", got[id(ctl, 1)].Inception, got[id(trt, 1)].Inception)
	}

	if code := post("/v1/feedback", schemas.TypeFeedback, ctl, 0, `{"kind":"abandoned"}`); code != http.StatusAccepted {
		t.Fatalf("feedback: %d", code)
	}
	out, err := runCLI(t, ctx, "experiment", "report", "--tenant", "acme", "--json", "--nats-url", url, "--data-dir", data)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	var r experiment.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	for _, a := range []string{schemas.ArmControl, schemas.ArmTreatment} {
		if r.Experiment != "e1" || r.Arms[a].Conversations != 1 || r.Arms[a].Activated != 1 {
			t.Fatalf("report %+v", r)
		}
	}
	if m, _ := experiment.Find(r.Activated, schemas.FeedbackAbandoned); m.Control != 1 || m.Treatment != 0 {
		t.Errorf("abandoned %+v", m)
	}
	es, err := audit.Timeline(ctx, js, "acme", ctl)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range es {
		seen = append(seen, e.Kind+" "+e.Text)
	}
	if all := strings.Join(seen, "\n"); !strings.Contains(all, "arm control (would have planted)") || !strings.Contains(all, "FEEDBACK abandoned") {
		t.Errorf("timeline:\n%s", all)
	}

	// The kill switch: the control conversation's next turn is planted.
	write(true)
	turn, posted := 2, 0
	rtest.CheckFor(t, time.Minute, "a planted turn after the kill", func() bool {
		if posted < turn {
			if code := post("/v1/turns", schemas.TypeTurn, ctl, turn, hotel); code != http.StatusAccepted {
				t.Fatalf("turn %d: %d", turn, code)
			}
			posted = turn
		}
		task, ok := tasks()[id(ctl, turn)]
		switch {
		case !ok:
			return false
		case task.Inception != nil:
			return true
		}
		turn++ // judged before the reload: offer the next turn
		return false
	})
}
