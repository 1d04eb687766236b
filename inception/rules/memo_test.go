package rules

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// The memo stays within its budget however many distinct messages it is
// fed, and keeps what was read recently.
func TestMemoBounded(t *testing.T) {
	const budget = 256 << 10
	mm := newMemo(budget)
	dr := &domainRules{}
	var recent string
	for i := range 4000 {
		text := fmt.Sprintf("message %d: I don't want travel insurance, just me; %s", i, strings.Repeat("x", i%300))
		mm.user(text)
		mm.agent("To confirm: 2 checked bags on reservation 123456? " + text)
		mm.candidates(dr, "Your reservations are ABC123 and XYZ789 "+text, "")
		if got := mm.bytes(); got > budget {
			t.Fatalf("after %d messages the memo holds %d bytes, over its %d", i+1, got, budget)
		}
		if i == 3990 {
			recent = text
		}
	}
	if mm.bytes() < budget/4 {
		t.Errorf("memo holds %d bytes of a %d budget: it evicts too eagerly", mm.bytes(), budget)
	}
	// A message read a moment ago is still held: the very facts come back.
	if a, b := mm.user(recent), mm.user(recent); a != b {
		t.Error("a recent message was analysed again")
	}
	// A message larger than a generation is analysed but not kept.
	huge := strings.Repeat("no insurance please. ", 400) // over a generation of a shard
	if f := mm.user(huge); len(f.ruledOut) == 0 {
		t.Error("the huge message's facts are wrong")
	}
	if got := mm.bytes(); got > budget {
		t.Fatalf("memo holds %d bytes after a huge message, over its %d", got, budget)
	}
}

// Facts read from the memo are those computed without it.
func TestMemoSameFacts(t *testing.T) {
	mm := newMemo(DefaultMemoBytes)
	for _, text := range []string{
		"I don't want travel insurance.",
		"Just me, no checked bags. Actually, make it 2 bags.",
		"me and my 2 kids, so 3 passengers total",
		"",
	} {
		want := newUserFacts(text)
		for range 2 { // a miss, then a hit
			got := mm.user(text)
			if got.lower != want.lower || got.justMe != want.justMe || got.party != want.party || strings.Join(got.ruledOut, "|") != strings.Join(want.ruledOut, "|") {
				t.Errorf("%q: memo facts %+v, want %+v", text, *got, *want)
			}
		}
	}
	agent := "To confirm: add 2 checked bags and 1 carry-on to 92103 for 250 USD. Proceed?"
	for range 2 {
		got, want := mm.agent(agent), newAgentFacts(agent)
		gn, gq := got.readBack()
		wn, wq := want.readBack()
		if got.lower != want.lower || strings.Join(gn, "|") != "92103|250" || strings.Join(wn, "|") != "92103|250" || fmt.Sprint(gq) != fmt.Sprint(wq) || gq["bag"] != "|2|" {
			t.Errorf("agent facts %q %v %v, want %q %v %v", got.lower, gn, gq, want.lower, wn, wq)
		}
	}
	var nilMemo *memo // no memo: computed afresh
	if f := nilMemo.user("just me"); !f.justMe {
		t.Error("a nil memo's facts are wrong")
	}
}

// Many goroutines deciding on the same conversations through one memo
// (the detector's case) decide as the module without a memo does; -race
// checks the memo's locking.
func TestMemoConcurrentDecisions(t *testing.T) {
	dialogues := inceptiontest.TrajectoryTurns(t)
	if len(dialogues) > 6 {
		dialogues = dialogues[:6]
	}
	tools := inceptiontest.DomainTools(t, "airline")
	var inputs []inception.Input
	for _, dlg := range dialogues {
		for i, u := range dlg {
			if u.Role == inception.RoleUser {
				inputs = append(inputs, inception.Input{Tenant: "t", Domain: "airline", Tools: tools, Dialogue: dlg[:i+1]})
			}
		}
	}
	plain, err := New(Config{MemoBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if plain.memo != nil {
		t.Fatal("MemoBytes -1 kept a memo")
	}
	ctx := context.Background()
	want := make([]inception.Decision, len(inputs))
	for i, in := range inputs {
		if want[i], err = plain.Detect(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(Config{MemoBytes: 64 << 10}) // small: evictions happen too
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*len(inputs))
	for g := range 4 {
		wg.Go(func() {
			for k := range inputs {
				i := (k + g*len(inputs)/4) % len(inputs)
				got, err := m.Detect(ctx, inputs[i])
				if err != nil || got != want[i] {
					errs <- fmt.Sprintf("turn %d: got %+v (%v), want %+v", i, got, err, want[i])
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// reset empties the memo, keeping its maps' room (the benchmarks' passes).
func (mm *memo) reset() {
	for i := range mm.users {
		mm.users[i].reset()
		mm.agents[i].reset()
		mm.cands[i].reset()
		mm.turns[i].reset()
		mm.refs[i].reset()
	}
}

func (s *memoShard[K, V]) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.young)
	clear(s.old)
	s.youngBytes, s.oldBytes = 0, 0
}
