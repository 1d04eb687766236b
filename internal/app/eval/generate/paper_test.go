package generate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/testutil"
)

// The paper-sized set and its rejected openings, in the source tree.
var (
	paperFile    = filepath.Join("..", "scenarios", "paper.jsonl")
	rejectedFile = filepath.Join("..", "scenarios", "paper_rejected.jsonl")
)

// paperCounts is how many openings paper.jsonl holds per domain and error
// type (the figure internal/app/eval/README.md gives), "none" counting
// the clean scenarios.
var paperCounts = map[string]map[string]int{
	taubench.Airline: {
		eval.TypeAnaphora: 26, eval.TypeMultipleInterpretation: 26, eval.TypeContradiction: 27,
		eval.TypeUnsupportedAction: 27, eval.TypeUnsupportedParameter: 27, eval.TypeUnsupportedDomain: 27,
		eval.TypeNone: 27,
	},
	taubench.Retail: {
		eval.TypeAnaphora: 71, eval.TypeMultipleInterpretation: 71, eval.TypeContradiction: 73,
		eval.TypeUnsupportedAction: 73, eval.TypeUnsupportedParameter: 73, eval.TypeUnsupportedDomain: 73,
		eval.TypeNone: 73,
	},
}

// rejectedOpening is one line of paper_rejected.jsonl: a scenario the
// checks refuse, with their reason.
type rejectedOpening struct {
	eval.Scenario
	Reason string `json:"reason"`
}

// paperWorld is what the checks of one domain read: its data, its
// checker and its τ-bench test tasks.
type paperWorld struct {
	dom   *taubench.Domain
	chk   *checker
	tasks []taubench.Task
}

func loadPaperWorlds(t *testing.T) map[string]*paperWorld {
	t.Helper()
	dir := testutil.TauBench(t)
	worlds := map[string]*paperWorld{}
	for _, d := range []string{taubench.Airline, taubench.Retail} {
		dom, err := taubench.Load(d, filepath.Join(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := taubench.LoadTasks(filepath.Join(dir, d), "test")
		if err != nil {
			t.Fatal(err)
		}
		worlds[d] = &paperWorld{dom: dom, chk: newChecker(d, inception.DefaultTaxonomy(), dom.Tools()), tasks: tasks}
	}
	return worlds
}

// paperProblem runs every check a generated opening must pass on a
// hand-written one — Validate with the user's candidates as the generator
// counts them — plus the data grounding the bundled set is held to: an
// anaphora or multiple-interpretation opening needs a user holding several
// reservations or orders. "" when the opening passes.
func paperProblem(w *paperWorld, s eval.Scenario) string {
	task := w.tasks[s.TaskID]
	o := s.Opening
	d := Draft{ErrorTurn: o.ErrorTurn, Evidence: o.Evidence, Readings: o.Readings, Mishandling: o.Mishandling, FollowUp: o.FollowUp}
	if r := w.chk.Validate(s.ErrorType, s.Style, d, userRecords(w.dom, task.UserID).candidates); r != "" {
		return r
	}
	if s.ErrorType != eval.TypeAnaphora && s.ErrorType != eval.TypeMultipleInterpretation {
		return ""
	}
	field := map[string]string{taubench.Airline: "reservations", taubench.Retail: "orders"}[s.Domain]
	u, _ := w.dom.Record("users", task.UserID)
	obj, _ := u.(*taubench.Object)
	var n int
	if obj != nil {
		list, _ := obj.Get(field)
		l, _ := list.([]any)
		n = len(l)
	}
	if n < 2 {
		return fmt.Sprintf("%s: %s holds %d %s, an ambiguous reference needs several", s.ErrorType, task.UserID, n, field)
	}
	return ""
}

func readRejected(t *testing.T) []rejectedOpening {
	t.Helper()
	raw, err := os.ReadFile(rejectedFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []rejectedOpening
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		var r rejectedOpening
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s line %d: %v", rejectedFile, line, err)
		}
		out = append(out, r)
	}
	return out
}

// TestPaperScenariosValidate holds paper.jsonl to what the issue asks:
// loaded by the real loader, every task resolving; every opening passing
// the generator's checks and the data grounding; every rejected opening
// failing them for the reason it is stored with; together exactly the
// filtered tasks × six types, one clean scenario per task, ids
// paper-<domain>-<task>-<type>, the two follow-up styles balanced per
// domain and type, and the counts the README gives.
func TestPaperScenariosValidate(t *testing.T) {
	worlds := loadPaperWorlds(t)
	raw, err := os.ReadFile(paperFile)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eval.LoadScenarios(bytes.NewReader(raw), eval.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := eval.NewTaskSource(testutil.TauBench(t)).Check(set); err != nil {
		t.Fatal(err)
	}
	rejected := readRejected(t)

	count := map[string]map[string]int{taubench.Airline: {}, taubench.Retail: {}}
	styles := map[string]int{}
	type slot struct {
		domain    string
		task      int
		errorType string
	}
	covered := map[slot]string{} // → which file covers it
	cover := func(s eval.Scenario, where string) {
		want := fmt.Sprintf("paper-%s-%d-%s", s.Domain, s.TaskID, s.ErrorType)
		if s.Clean() {
			want = fmt.Sprintf("paper-%s-%d-clean", s.Domain, s.TaskID)
		}
		if s.ID != want {
			t.Errorf("%s: id %s, want %s", where, s.ID, want)
		}
		if s.TaskSplit() != "test" {
			t.Errorf("%s: split %s, want test", s.ID, s.TaskSplit())
		}
		k := slot{s.Domain, s.TaskID, s.ErrorType}
		if prev, dup := covered[k]; dup {
			t.Errorf("%s: %s is already covered in %s", where, s.ID, prev)
		}
		covered[k] = where
		if !s.Clean() {
			styles[s.Domain+"/"+s.ErrorType+"/"+s.Style]++
		}
	}
	for _, s := range set {
		cover(s, "paper.jsonl")
		count[s.Domain][s.ErrorType]++
		if s.Clean() {
			continue
		}
		if r := paperProblem(worlds[s.Domain], s); r != "" {
			t.Errorf("%s: %s", s.ID, r)
		}
	}
	for _, r := range rejected {
		cover(r.Scenario, "paper_rejected.jsonl")
		if r.Opening == nil || r.Clean() {
			t.Errorf("rejected %s: not an error scenario with an opening", r.ID)
			continue
		}
		if got := paperProblem(worlds[r.Domain], r.Scenario); r.Reason == "" || got != r.Reason {
			t.Errorf("rejected %s: stored reason %q, the checks say %q", r.ID, r.Reason, got)
		}
	}

	for d, w := range worlds {
		keep := eval.PaperTasks(d, w.tasks)
		for _, task := range keep {
			for _, et := range append(slices.Clone(eval.ErrorTypes), eval.TypeNone) {
				if _, ok := covered[slot{d, task, et}]; !ok {
					t.Errorf("%s task %d: no %s scenario, accepted or rejected", d, task, et)
				}
			}
		}
		for k := range covered {
			if k.domain == d && !slices.Contains(keep, k.task) {
				t.Errorf("%s task %d (%s) is not one of the filtered tasks", d, k.task, k.errorType)
			}
		}
		for _, et := range eval.ErrorTypes {
			lazy, check := styles[d+"/"+et+"/"+eval.StyleLazyFeedback], styles[d+"/"+et+"/"+eval.StyleDoubleCheck]
			if lazy-check > 1 || check-lazy > 1 {
				t.Errorf("%s/%s: %d lazy_feedback and %d double_check follow-ups, want them alternated", d, et, lazy, check)
			}
		}
		for et, want := range paperCounts[d] {
			if got := count[d][et]; got != want {
				t.Errorf("%s/%s: %d scenarios in paper.jsonl, the README says %d", d, et, got, want)
			}
		}
	}
}
