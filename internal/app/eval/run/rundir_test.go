package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/internal/app/eval"
)

// A results line cut short by a kill is dropped from the file when the run
// is resumed; a play recorded twice counts once.
func TestRunDirResumeDropsACutLine(t *testing.T) {
	dir := t.TempDir()
	m := Manifest{Conditions: []string{"none"}, Trials: 1, Trigger: TriggerFixed, MaxTurns: 12, Agent: "a", User: "u"}
	rd, err := openRunDir(dir, m, []byte("{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := &Play{Condition: "none", ScenarioID: "s1", Trial: 1, Result: eval.Result{Condition: "none", ScenarioID: "s1", Trial: 1}}
	for range 2 {
		if err := rd.record(p); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, ResultsFile)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"condition":"none","scen`)
	f.Close()
	rd, err = openRunDir(dir, m, []byte("{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !rd.isDone(playKey{"none", "s1", 1}) || rd.isDone(playKey{"none", "s2", 1}) {
		t.Errorf("done %v", rd.done)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), `"scen`+"\n") || !strings.HasSuffix(string(raw), "\n") {
		t.Errorf("cut line kept: %q", raw)
	}
	if rs, err := ReadResults(dir); err != nil || len(rs) != 1 {
		t.Errorf("results %v, %v", rs, err)
	}
	if _, err := os.Stat(filepath.Join(dir, PlaysDir, "none", "s1.t1.json")); err != nil {
		t.Errorf("play record: %v", err)
	}
}

// A run directory holding another run (other scenarios, models or
// trigger) is refused; more conditions and trials are a resume.
func TestRunDirRefusesAnotherRun(t *testing.T) {
	dir := t.TempDir()
	m := Manifest{Conditions: []string{"none"}, Trials: 1, Trigger: TriggerFixed, MaxTurns: 12, Agent: "a", User: "u"}
	if _, err := openRunDir(dir, m, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	more := m
	more.Conditions, more.Trials = []string{"rein"}, 3
	if _, err := openRunDir(dir, more, []byte("one\n")); err != nil {
		t.Fatalf("growing the run: %v", err)
	}
	if got, _ := ReadManifest(dir); got.Trials != 3 || len(got.Conditions) != 2 {
		t.Errorf("manifest %+v", got)
	}
	for name, change := range map[string]func(*Manifest) ([]byte, string){
		"scenarios": func(*Manifest) ([]byte, string) { return []byte("two\n"), "another scenario set" },
		"agent":     func(x *Manifest) ([]byte, string) { x.Agent = "b"; return []byte("one\n"), "models" },
		"trigger":   func(x *Manifest) ([]byte, string) { x.Trigger = TriggerDynamic; return []byte("one\n"), "trigger" },
		"user prompt": func(x *Manifest) ([]byte, string) {
			x.UserPrompt = UserPromptTauBench
			return []byte("one\n"), "user prompt"
		},
		"temperature": func(x *Manifest) ([]byte, string) {
			t := 0.7
			x.UserTemperature = &t
			return []byte("one\n"), "temperatures"
		},
	} {
		x := m
		set, want := change(&x)
		_, err := openRunDir(dir, x, set)
		if !errors.Is(err, ErrRunDir) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	set := eval.BundledQuick(eval.LoadOptions{})
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"ok":        {Config{Scenarios: set, Dir: "d"}, ""},
		"condition": {Config{Scenarios: set, Dir: "d", Conditions: []string{"rein", "magic"}}, `condition "magic"`},
		"dir":       {Config{Scenarios: set}, "no run directory"},
		"empty":     {Config{Dir: "d"}, "no scenarios"},
		"trigger":   {Config{Scenarios: set, Dir: "d", Trigger: "always"}, `trigger "always"`},
		"turns":     {Config{Scenarios: set, Dir: "d", MaxTurns: 2}, "max turns 2"},
		"trials":    {Config{Scenarios: set, Dir: "d", Trials: -1}, "trials -1"},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// Conversation ids are NATS-token safe and distinct for distinct scenario ids.
func TestConversationIDs(t *testing.T) {
	long := strings.Repeat("x", 128)
	ids := map[string]string{}
	for _, s := range []string{"air-ana-1", "a.b", "a_b", long, long[:127] + "y"} {
		id := conversationID(s, 12)
		if len(id) > 128 || strings.ContainsAny(id, ". *>") {
			t.Errorf("%q → %q", s, id)
		}
		if prev, dup := ids[id]; dup {
			t.Errorf("%q and %q share %q", prev, s, id)
		}
		ids[id] = s
	}
	if got := conversationID("air-ana-1", 2); got != "air-ana-1-t2" {
		t.Errorf("plain id: %q", got)
	}
}
