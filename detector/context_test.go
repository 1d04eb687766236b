package detector

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/llmmodule"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// countingModule answers clear and counts its calls (the cascade's model).
type countingModule struct{ calls atomic.Int64 }

func (c *countingModule) Name() string { return "counting" }
func (c *countingModule) Detect(context.Context, inception.Input) (inception.Decision, error) {
	c.calls.Add(1)
	return inception.Decision{Rein: true, ErrorType: "x", Reasoning: "y"}, nil
}

// contextCases are dialogues (alternating user and agent, ending with the
// user turn to judge) around the checks that read the earlier dialogue.
func contextCases() [][]inception.Utterance {
	listing := "I found two reservations: ABC123 (Boston to Denver) and XYZ789 (Denver to Seattle). Which one would you like to cancel?"
	return [][]inception.Utterance{
		inceptiontest.Dialogue("I want to cancel a reservation.", listing, "Cancel that one."),
		inceptiontest.Dialogue("I want to cancel a reservation.", listing, "Cancel that one from Boston."),
		inceptiontest.Dialogue("I want to cancel a reservation.", listing, "Cancel those, please."),
		inceptiontest.Dialogue("I want to cancel a reservation.", listing, "Cancel ABC123, not that one."),
		inceptiontest.Dialogue("I booked a flight last week, please cancel it."),
		inceptiontest.Dialogue("Cancel that one."),
		inceptiontest.Dialogue("Hello", "Hi! How can I help?", "Please cancel that one."),
		inceptiontest.Dialogue("I want to fly to Denver.", "Done, booked to Denver.", "I never said that, I wanted Seattle."),
		inceptiontest.Dialogue("I never said that."),
		inceptiontest.Dialogue("Hi", "Welcome. Which reservation, ABC123 or XYZ789?", "Change that one to economy."),
		inceptiontest.Dialogue("Change my flight.", "Which one, ABC123 or XYZ789?", "Either is fine, I'm not sure which."),
		inceptiontest.Dialogue("Change my flight.", "Which one, ABC123 or XYZ789?", "Change it to May 24, in business."),
		inceptiontest.Dialogue("Can you also book me a hotel in Denver?", listing, "Cancel that one."),
		inceptiontest.Dialogue("I'd like to change the date of ABC123.", "Sure. ABC123 or XYZ789? Which one?", "ABC123, to May 24 please."),
	}
}

// partials returns what the stage may hold of a window of w utterances of
// full when agent replies after some point are not merged yet: for every
// cut, full without the agent replies after it, windowed.
func partials(full []inception.Utterance, w int) [][]inception.Utterance {
	var out [][]inception.Utterance
	for cut := 0; cut <= len(full); cut++ {
		if cut < len(full) && full[cut].Role != inception.RoleAgent {
			continue // the same partial as the next agent reply's cut
		}
		var p []inception.Utterance
		for i, u := range full {
			if u.Role == inception.RoleAgent && i >= cut {
				continue
			}
			p = append(p, u)
		}
		out = append(out, window(p, w))
	}
	return out
}

func window(d []inception.Utterance, w int) []inception.Utterance {
	if len(d) > w {
		return d[len(d)-w:]
	}
	return d
}

// TestNeedsContextKeepsDecisions checks the ContextFree contract of the
// rules module and the cascade: whenever NeedsContext says the agent's
// replies are not needed, the decision on the dialogue without them is the
// decision on the full one (and the cascade's model would not run).
func TestNeedsContextKeepsDecisions(t *testing.T) {
	ctx := context.Background()
	precise, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := rules.New(rules.Config{Mode: rules.Recall})
	if err != nil {
		t.Fatal(err)
	}
	model := &countingModule{}
	cascade, err := llmmodule.NewCascade(gate, model)
	if err != nil {
		t.Fatal(err)
	}
	tools := inceptiontest.MiniTools(t, "airline")
	cases := contextCases()
	if !testing.Short() {
		// Every trajectory under the race detector took 8 minutes; a
		// fixed sample (every 8th) keeps real conversations of every shape
		// in CI, REIN_LONG=1 runs them all.
		for i, tr := range inceptiontest.TrajectoryTurns(t) {
			if testutil.Long() || i%8 == 0 {
				cases = append(cases, tr)
			}
		}
	}
	var needed, saved int
	for _, full := range cases {
		for _, w := range []int{2, 3, 40} {
			fullIn := inception.Input{Domain: "airline", Tools: tools, Dialogue: window(full, w)}
			want, err := precise.Detect(ctx, fullIn)
			if err != nil {
				t.Fatal(err)
			}
			before := model.calls.Load()
			wantCascade, err := cascade.Detect(ctx, fullIn)
			if err != nil {
				t.Fatal(err)
			}
			modelRan := model.calls.Load() > before
			for _, p := range partials(full, w) {
				in := inception.Input{Domain: "airline", Tools: tools, Dialogue: p}
				if precise.NeedsContext(in) {
					needed++
				} else {
					saved++
					if got, _ := precise.Detect(ctx, in); !reflect.DeepEqual(got, want) {
						t.Errorf("rules on %q: without agent replies %+v, with them %+v", p, got, want)
					}
				}
				if !cascade.NeedsContext(in) {
					if modelRan {
						t.Errorf("cascade on %q: the model runs on the full dialogue", full)
					}
					if got, _ := cascade.Detect(ctx, in); !reflect.DeepEqual(got, wantCascade) {
						t.Errorf("cascade on %q: without agent replies %+v, with them %+v", p, got, wantCascade)
					}
				}
			}
		}
	}
	t.Logf("rules: %d partial dialogues needed the agent's replies, %d did not", needed, saved)
	if needed == 0 || saved == 0 {
		t.Errorf("vacuous: %d needed, %d not", needed, saved)
	}
}

func TestRulesNeedsContextOnlyForUnsettledCues(t *testing.T) {
	m, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	recall, err := rules.New(rules.Config{Mode: rules.Recall})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dlg  []inception.Utterance
		want bool
	}{
		{"no cue", inceptiontest.Dialogue("I want to cancel a reservation.", "Which one?", "ABC123 please."), false},
		{"bare anaphora", inceptiontest.Dialogue("I want to cancel a reservation.", "Which one?", "Cancel that one."), true},
		{"anaphora resolved in the turn", inceptiontest.Dialogue("Hi", "Which one?", "Cancel that one from Boston."), false},
		// A bare plural is ambiguous among three or more listed entities
		// (issue 22), so it needs the agent's listing.
		{"plural after earlier turns", inceptiontest.Dialogue("Hi", "Which one?", "Cancel those."), true},
		{"plural naming the whole set", inceptiontest.Dialogue("Hi", "Which one?", "Cancel all of those."), false},
		{"plural as the first turn", inceptiontest.Dialogue("Cancel those."), true},
		{"contradiction after a user turn", inceptiontest.Dialogue("Fly me to Denver.", "Booked.", "I never said that."), true},
		{"contradiction with no earlier user turn", inceptiontest.Dialogue("I never said that."), false},
		{"other ambiguity", inceptiontest.Dialogue("Change my flight.", "Which one?", "Either is fine, I'm not sure which."), false},
	} {
		in := inception.Input{Domain: "airline", Dialogue: tc.dlg}
		if got := m.NeedsContext(in); got != tc.want {
			t.Errorf("%s: NeedsContext = %v, want %v", tc.name, got, tc.want)
		}
		if recall.NeedsContext(in) {
			t.Errorf("%s: the recall gate never reads the earlier dialogue", tc.name)
		}
	}
}

// TestConversationMergesLateAgentRepliesInOrder: user turns added as they
// come and agent replies merged later give the same window as every turn
// added in stream order.
func TestConversationMergesLateAgentRepliesInOrder(t *testing.T) {
	type stored struct {
		seq  uint64
		turn schemas.Turn
	}
	var log []stored
	for i := 1; i <= 6; i++ {
		log = append(log,
			stored{uint64(len(log) + 1), schemas.Turn{Role: inception.RoleUser, Turn: i, Text: "u"}},
			stored{uint64(len(log) + 2), schemas.Turn{Role: inception.RoleAgent, Turn: i, Text: "a"}},
			stored{uint64(len(log) + 3), schemas.Turn{Role: inception.RoleAgent, Turn: 100 + i, Text: "a2"}}) // a second reply
	}
	for _, max := range []int{2, 3, 5, 40} {
		var inOrder, lazy conversation
		for _, s := range log {
			inOrder.add(s.turn, s.seq, max)
			if s.turn.Role == inception.RoleUser {
				// Merge the agent replies stored before this user turn at
				// every other turn only, as the stage does when needed.
				if s.turn.Turn%2 == 0 {
					for _, a := range log {
						if a.turn.Role == inception.RoleAgent && a.seq > lazy.agentSeq && a.seq < s.seq {
							lazy.add(a.turn, a.seq, max)
						}
					}
				}
				lazy.add(s.turn, s.seq, max)
				lazy.add(s.turn, s.seq, max) // a redelivery changes nothing
				if s.turn.Turn%2 == 0 && !reflect.DeepEqual(lazy.utter, inOrder.utter) {
					t.Errorf("max %d, turn %d: lazy %v, in order %v", max, s.turn.Turn, lazy.utter, inOrder.utter)
				}
			}
		}
	}
}

// An agent turn delivered by the consumer (a durable made before the filter
// was narrowed) is acked without effect: no conversation is built for it.
func TestStageHandleAcksAgentTurnsWithoutEffect(t *testing.T) {
	h := testutil.StartJetStream(t, "")
	s, err := New(Config{TaxonomyVersion: "test-1"}, Deps{
		StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})},
		Module:    &countingModule{},
		Tools:     func(string) ([]llm.Tool, error) { return nil, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := schemas.NewEvent(schemas.TypeTurn, "turn-acme-c9-1-agent", "", schemas.Meta{Tenant: "acme", Conversation: "c9", Turn: 1},
		schemas.Turn{Role: inception.RoleAgent, Turn: 1, Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := streams.Encode(bus.TurnSubject("acme", "c9", inception.RoleAgent), &ev)
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.Decode(msg.Subject, msg.Header, msg.Data, 0)
	if err != nil {
		t.Fatal(err)
	}
	d.Sequence = 7
	if err := s.handle(context.Background(), d); err != nil {
		t.Fatalf("handle: %v", err)
	}
	if _, ok := s.convs.Get(bus.ConversationKey("acme", "c9")); ok {
		t.Error("an agent turn built a conversation")
	}
	if n := h.StreamMsgs(t, bus.StreamDetections); n != 0 {
		t.Errorf("detections = %d", n)
	}
}

// BenchmarkRulesNeedsContext is the cost the stage adds per user turn with
// the rules module: a clean turn and an anaphora cue.
func BenchmarkRulesNeedsContext(b *testing.B) {
	m, err := rules.New(rules.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for name, text := range map[string]string{
		"clean": "I'd like to move the Denver to Seattle flight to May 24, same cabin, and pay the difference with my credit card ending in 7815.",
		"cued":  "Change that one to the later flight, please.",
	} {
		in := inception.Input{Domain: "airline", Dialogue: inceptiontest.Dialogue("Hi, I need to change a flight.", text)}
		in.Dialogue[1].Role = inception.RoleUser
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.NeedsContext(in)
			}
		})
	}
}
