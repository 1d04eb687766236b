package eval

import (
	"errors"
	"strings"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/testutil"
)

const okLine = `{"id":"a1","domain":"airline","task_id":6,"error_type":"anaphora","style":"lazy_feedback","opening":{"error_turn":"move that one","mishandling":"moving UHDAHF","follow_up":"not that"}}`

func TestLoadScenariosErrorsNameLineAndField(t *testing.T) {
	cases := []struct {
		name, line string
		want       []string // substrings of the error
	}{
		{"unknown type", strings.Replace(okLine, `"anaphora"`, `"anaphor"`, 1), []string{"line 3", "field error_type", `"anaphor" is not an error type`}},
		{"bad domain", strings.Replace(okLine, `"airline"`, `"hotel"`, 1), []string{"line 3", "field domain"}},
		{"task id as string", strings.Replace(okLine, `"task_id":6`, `"task_id":"6"`, 1), []string{"line 3", "field task_id", "want a whole number"}},
		{"negative task", strings.Replace(okLine, `"task_id":6`, `"task_id":-1`, 1), []string{"line 3", "field task_id", "negative"}},
		{"empty follow-up", strings.Replace(okLine, `"not that"`, `"  "`, 1), []string{"line 3", "field opening.follow_up", "empty"}},
		{"bad style", strings.Replace(okLine, `"lazy_feedback"`, `"shouting"`, 1), []string{"line 3", "field style"}},
		{"no opening", `{"id":"a1","domain":"airline","task_id":6,"error_type":"anaphora","style":"double_check"}`, []string{"line 3", "field opening", "missing"}},
		{"unknown field", strings.Replace(okLine, `"task_id"`, `"task":1,"task_id"`, 1), []string{"line 3", "field task", "not a scenario field"}},
		{"nested type", strings.Replace(okLine, `"follow_up":"not that"`, `"follow_up":3`, 1), []string{"line 3", "field opening.follow_up", "want a string"}},
		{"clean with opening", strings.Replace(okLine, `"anaphora","style":"lazy_feedback",`, `"none",`, 1), []string{"line 3", "field opening", "clean"}},
		{"broken json", `{"id":"a1",`, []string{"line 3", "not valid JSON"}},
		{"bad id", strings.Replace(okLine, `"a1"`, `"a 1"`, 1), []string{"line 3", "field id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := "# comment\n\n" + c.line + "\n"
			_, err := LoadScenarios(strings.NewReader(in), LoadOptions{})
			if !errors.Is(err, ErrInvalidScenario) {
				t.Fatalf("error %v, want ErrInvalidScenario", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	_, err := LoadScenarios(strings.NewReader(okLine+"\n"+okLine+"\n"), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "line 2: field id") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("duplicate id: %v", err)
	}
}

func TestLoadScenariosSeenFlag(t *testing.T) {
	unseen := strings.Replace(okLine, `"task_id"`, `"seen":false,"task_id"`, 1)
	clean := `{"id":"c1","domain":"retail","task_id":1,"error_type":"none"}`
	contra := strings.NewReplacer(`"a1"`, `"a2"`, `"anaphora"`, `"contradiction"`).Replace(okLine)
	in := okLine + "\n" + strings.Replace(unseen, `"a1"`, `"a3"`, 1) + "\n" + clean + "\n" + contra + "\n"

	// Stored flags are kept, a missing one means seen.
	got, err := LoadScenarios(strings.NewReader(in), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{got[0].SeenKey(), got[1].SeenKey(), got[2].SeenKey(), got[3].SeenKey()}
	if strings.Join(keys, ",") != "seen,unseen,clean,seen" {
		t.Fatalf("stored: %v", keys)
	}
	// A taxonomy decides when given: the paper holds out contradiction.
	got, err = LoadScenarios(strings.NewReader(in), LoadOptions{HeldOut: PaperHeldOut})
	if err != nil {
		t.Fatal(err)
	}
	keys = []string{got[0].SeenKey(), got[1].SeenKey(), got[2].SeenKey(), got[3].SeenKey()}
	if strings.Join(keys, ",") != "seen,seen,clean,unseen" {
		t.Fatalf("derived: %v", keys)
	}
}

func TestBundledSetCoversEveryTypeAndDomain(t *testing.T) {
	set := BundledQuick(LoadOptions{HeldOut: PaperHeldOut})
	count := map[string]int{}
	styles := map[string]int{}
	for _, s := range set {
		count[s.Domain+"/"+s.ErrorType]++
		styles[s.Style]++
		if s.Clean() != (s.Opening == nil) {
			t.Errorf("%s: clean %v with opening %v", s.ID, s.Clean(), s.Opening)
		}
	}
	clean := 0
	for _, d := range []string{"airline", "retail"} {
		for _, et := range ErrorTypes {
			if count[d+"/"+et] < 2 {
				t.Errorf("%s/%s: %d scenarios, want at least 2", d, et, count[d+"/"+et])
			}
		}
		clean += count[d+"/none"]
	}
	if clean < 6 {
		t.Errorf("%d clean scenarios, want at least 6", clean)
	}
	if styles[StyleLazyFeedback] == 0 || styles[StyleDoubleCheck] == 0 {
		t.Errorf("styles %v: both follow-up styles must occur", styles)
	}
}

// Every bundled scenario names a real task, and the openings that point at
// one of several records (anaphora, multiple interpretation) name a user
// who does hold several reservations or orders.
func TestBundledSetResolvesAgainstTauBench(t *testing.T) {
	dir := testutil.TauBench(t)
	set := BundledQuick(LoadOptions{})
	ts := NewTaskSource(dir)
	if err := ts.Check(set); err != nil {
		t.Fatal(err)
	}
	loaded := map[string]*taubench.Domain{}
	for _, s := range set {
		if s.ErrorType != TypeAnaphora && s.ErrorType != TypeMultipleInterpretation {
			continue
		}
		d := loaded[s.Domain]
		if d == nil {
			var err error
			if d, err = taubench.Load(s.Domain, dir+"/"+s.Domain); err != nil {
				t.Fatal(err)
			}
			loaded[s.Domain] = d
		}
		task, _ := ts.Task(s)
		u, ok := d.Record("users", task.UserID)
		if !ok {
			t.Fatalf("%s: user %s not found", s.ID, task.UserID)
		}
		field := map[string]string{"airline": "reservations", "retail": "orders"}[s.Domain]
		list, _ := u.(*taubench.Object).Get(field)
		if n := len(list.([]any)); n < 2 {
			t.Errorf("%s: %s has %d %s, an ambiguous reference needs several", s.ID, task.UserID, n, field)
		}
	}
	bad := Scenario{ID: "x", Domain: "airline", TaskID: 50, ErrorType: TypeNone}
	if _, err := ts.Task(bad); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("task 50 of 50: %v", err)
	}
}
