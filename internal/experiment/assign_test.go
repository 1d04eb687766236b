package experiment

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
)

var testKey = []byte("0123456789abcdef-test-key")

func TestExperimentBalanceOver100kIDs(t *testing.T) {
	for _, h := range []float64{0.1, 0.25, 0.5} {
		n, control := 100_000, 0
		for i := range n {
			a := Assign(testKey, "acme", fmt.Sprintf("conv-%d", i), Tenant{Name: "e1", Holdout: h})
			if a.Experiment != "e1" {
				t.Fatalf("experiment %q", a.Experiment)
			}
			if a.Arm == schemas.ArmControl {
				control++
			}
		}
		if got := float64(control) / float64(n); math.Abs(got-h) > 0.01 {
			t.Errorf("holdout %v: control fraction %.4f is not within 1%%", h, got)
		}
	}
}

func TestExperimentAssignmentIsStableAndKeyed(t *testing.T) {
	tn := Tenant{Name: "e1", Holdout: 0.5}
	differ := 0
	for i := range 1000 {
		c := fmt.Sprintf("c%d", i)
		a, b := Assign(testKey, "acme", c, tn), Assign(append([]byte(nil), testKey...), "acme", c, tn)
		if a != b {
			t.Fatalf("%s: %v then %v", c, a, b)
		}
		if Assign([]byte("another-key-of-16-bytes"), "acme", c, tn) != a {
			differ++
		}
	}
	// Another key draws independently: about half differ.
	if differ < 400 || differ > 600 {
		t.Errorf("%d of 1000 arms differ under another key", differ)
	}
}

func TestExperimentHoldoutCappedAndValidated(t *testing.T) {
	for _, h := range []float64{0, -0.1, 0.51, 1, math.NaN()} {
		c := Config{Key: string(testKey), Tenants: map[string]Tenant{"acme": {Name: "e1", Holdout: h}}}
		if err := c.Validate(); err == nil {
			t.Errorf("holdout %v accepted", h)
		}
	}
	if err := (Config{Key: "short", Tenants: map[string]Tenant{"acme": {Name: "e1", Holdout: 0.1}}}).Validate(); err == nil {
		t.Error("a short key accepted")
	}
	if err := (Config{Key: string(testKey), Tenants: map[string]Tenant{"acme": {Name: "a.b", Holdout: 0.1}}}).Validate(); err == nil {
		t.Error("an experiment name with a dot accepted")
	}
	// Even a Tenant built by hand never holds out more than MaxHoldout.
	control := 0
	for i := range 10_000 {
		if Assign(testKey, "acme", fmt.Sprint(i), Tenant{Name: "e", Holdout: 0.9}).Arm == schemas.ArmControl {
			control++
		}
	}
	if control > 5200 {
		t.Errorf("%d of 10000 in control with holdout 0.9", control)
	}
}

func TestExperimentStickyKeepsTheFirstArm(t *testing.T) {
	ctl := Assignment{Experiment: "e1", Arm: schemas.ArmControl}
	tr := Assignment{Experiment: "e1", Arm: schemas.ArmTreatment}
	cases := []struct {
		name            string
		recorded, drawn Assignment
		want            Assignment
	}{
		{"first turn", Assignment{}, ctl, ctl},
		{"fraction changed mid-conversation", ctl, tr, ctl},
		{"killed", ctl, Assignment{}, Assignment{}},
		{"new experiment", Assignment{Experiment: "e0", Arm: schemas.ArmControl}, tr, tr},
	}
	for _, c := range cases {
		if got := Sticky(c.recorded, c.drawn); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestExperimentKillSwitchReloadsWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "experiments.yaml")
	if err := os.WriteFile(filepath.Join(dir, "key"), append(testKey, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(body string) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("key_file: key\ntenants:\n  acme: {name: e1, holdout: 0.5}\n")
	cfg, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAssigner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A conversation in control before the kill.
	var conv string
	for i := 0; conv == ""; i++ {
		if a.Assign("acme", fmt.Sprint(i)).Arm == schemas.ArmControl {
			conv = fmt.Sprint(i)
		}
	}
	if a.Assign("other", conv) != (Assignment{}) {
		t.Error("a tenant without an experiment got an arm")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	errs := make(chan error, 16)
	go func() {
		defer close(done)
		a.Watch(ctx, path, 5*time.Millisecond, func(err error) { errs <- err })
	}()
	defer func() { cancel(); <-done }()

	write("key_file: key\ntenants:\n  acme: {name: e1, holdout: 0.9}\n") // refused: kept
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "holdout") {
			t.Errorf("reload error %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an invalid reload was not reported")
	}
	if a.Assign("acme", conv).Arm != schemas.ArmControl {
		t.Fatal("an invalid file changed the arms")
	}
	write("key_file: key\ntenants:\n  acme: {name: e1, holdout: 0.5, killed: true}\n")
	testutil.CheckFor(t, 10*time.Second, "the kill switch to end the holdout", func() bool {
		return a.Assign("acme", conv) == (Assignment{})
	})
}
