package rules

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/planted"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// Per-type cases written from the taxonomy definitions: each positive case
// is an instance of the definition, each negative a near miss that is fine.
func TestRulesPerType(t *testing.T) {
	const listed = "I found two reservations: ABC123 (Boston to Denver) and XYZ789 (Denver to Seattle). Which one would you like to change?"
	cases := []struct {
		name, domain string
		dialogue     []string
		want         string // "" = no activation
	}{
		// anaphora: a reference with no antecedent or several candidates.
		{"anaphora: opening reference", "airline", []string{"Please cancel that one."}, inception.TypeAnaphora},
		{"anaphora: bare reference among listed ids", "airline", []string{"Hi, I'm sara_doe_496", listed, "Yes, change that one please."}, inception.TypeAnaphora},
		{"anaphora: pronoun among listed ids", "airline", []string{"Hi", listed, "Just cancel it."}, inception.TypeAnaphora},
		{"anaphora: retail orders", "retail", []string{"Hi", "You have orders #W1234567 and #W7654321. Which one?", "Return that one please."}, inception.TypeAnaphora},
		{"no anaphora: user names the id", "airline", []string{"Hi", listed, "Cancel that one, XYZ789."}, ""},
		{"no anaphora: resolved in the same breath", "airline", []string{"Hi", listed, "That one from Boston."}, ""},
		{"no anaphora: antecedent in the same turn", "airline", []string{"I booked a flight by mistake and want to cancel it."}, ""},
		{"no anaphora: single candidate", "airline", []string{"Hi", "Your reservation ABC123 is confirmed. Anything else?", "Yes, change it to business."}, ""},
		{"no anaphora: plural over a list", "airline", []string{"Hi", listed, "Cancel those reservations."}, ""},
		{"anaphora: agent listed without asking", "airline", []string{"Hi", "You have ABC123 (Boston to Denver) and XYZ789 (Denver to Seattle).", "Please cancel it."}, inception.TypeAnaphora},
		{"anaphora: bulleted items", "retail", []string{"Hi", "Order #W1234567 contains:\n- Kettle (1L, black)\n- Kettle (1.5L, silver)\n- Lamp (USB)", "I don't need the kettle, cancel it."}, inception.TypeAnaphora},
		{"anaphora: property shared by several", "airline", []string{"Hi", "You have ABC123 (BOS to DEN, business), XYZ789 (DEN to SEA, business) and QRS456 (SEA to LAX, economy).", "The business one. Move it to May 30."}, inception.TypeAnaphora},
		{"no anaphora: property picks one", "airline", []string{"Hi", "You have ABC123 (BOS to DEN, business), XYZ789 (DEN to SEA, business) and QRS456 (SEA to LAX, economy).", "The economy one, cancel it."}, ""},
		{"no anaphora: the user names the id after a list", "airline", []string{"Hi", listed, "Cancel reservation XYZ789."}, ""},
		{"no anaphora: possessive", "airline", []string{"I want to cancel my reservation."}, ""},

		// multiple_interpretation: several readings, different actions.
		{"multiple: cancel or return", "retail", []string{"I want to cancel or return my order #W1234567."}, inception.TypeMultipleInterpretation},
		{"multiple: change or cancel", "airline", []string{"Hi", "How can I help?", "I'd like to change or cancel my trip, whichever."}, inception.TypeMultipleInterpretation},
		{"multiple: whichever works", "airline", []string{"Hi", "Shall I refund to the card or a certificate?", "Whichever works."}, inception.TypeMultipleInterpretation},
		{"multiple: noun phrase fits two entities", "airline", []string{"Hi", "You have two certificates, $100 and $250.", "Use the certificate for the new booking."}, inception.TypeMultipleInterpretation},
		{"multiple: open choice over criteria", "airline", []string{"Hi", "HAT001 at 07:00 ($200) or HAT002 at 18:00 ($150).", "Put me on the later one or whichever is cheaper."}, inception.TypeMultipleInterpretation},
		{"multiple: upgrade with two cabins above", "airline", []string{"Hi", "Reservation ABC123 is in basic economy.", "I'd like an upgrade on ABC123 please."}, inception.TypeMultipleInterpretation},
		{"no multiple: upgrade to a named cabin", "airline", []string{"Hi", "Reservation ABC123 is in basic economy.", "Upgrade ABC123 to business please."}, ""},
		{"no multiple: alternative settled by the facts", "retail", []string{"Cancel order #W1234567, or return it if it was delivered."}, ""},
		{"no multiple: single criterion", "airline", []string{"Hi", "HAT001 ($200) or HAT002 ($150).", "Whichever is cheapest."}, ""},
		{"no multiple: or between nouns", "airline", []string{"Can you check flights to Boston or New York?"}, ""},
		{"no multiple: single action", "retail", []string{"I want to return my order #W1234567."}, ""},

		// contradiction: conflicts with earlier statements.
		{"contradiction: never said", "airline", []string{"Cancel reservation ABC123.", "Done, ABC123 is cancelled.", "I never said to cancel it!"}, inception.TypeContradiction},
		{"contradiction: go ahead, no wait", "retail", []string{"Exchange my shoes.", "Shall I proceed?", "Yes, go ahead. No wait, don't."}, inception.TypeContradiction},
		{"contradiction: asks for what they ruled out", "airline", []string{"Economy, no insurance.", "Booked: economy, $300. Anything else?", "Yes, add the insurance like I asked."}, inception.TypeContradiction},
		{"contradiction: keep it but cancel it", "retail", []string{"Please cancel #W1234567 but keep the kettle from it."}, inception.TypeContradiction},
		{"contradiction: only me, then both of us", "airline", []string{"Just me, one passenger.", "Economy?", "Economy for both of us."}, inception.TypeContradiction},
		{"no contradiction: complaint about the agent", "airline", []string{"Two bags please.", "I added three bags.", "That's not what I said."}, ""},
		{"no contradiction: denying what was never said", "airline", []string{"How much is a bag?", "$50. I added one bag.", "I never said to add a bag."}, ""},
		{"contradiction: claims to have said what they did not", "retail", []string{"Original card please.", "Refund to credit card 7039111. Confirm?", "Yes but put it on the gift card as I said."}, inception.TypeContradiction},
		{"contradiction: agrees to a read-back but states another value", "retail", []string{"Hi", "The new address is 55 Pine St, San Diego, CA 92103?", "Yes correct, 55 Pine St, San Diego CA 92130."}, inception.TypeContradiction},
		{"no contradiction: self-correction", "airline", []string{"Add insurance… actually no, forget that. Just the flights."}, ""},
		{"no contradiction: nothing earlier", "airline", []string{"I never said that to anyone, but please book a flight."}, ""},
		{"no contradiction: plain correction of agent", "airline", []string{"Book economy.", "Booked basic economy.", "Please make it economy as I asked."}, ""},

		// unsupported_action: operations the tools do not offer.
		{"action: window seat", "airline", []string{"Can I pick a window seat on my flight?"}, inception.TypeUnsupportedAction},
		{"action: seat selection", "airline", []string{"Hi", "How can I help?", "I'd like seat selection for ABC123."}, inception.TypeUnsupportedAction},
		{"action: price match airline", "airline", []string{"Will you price match a cheaper fare?"}, inception.TypeUnsupportedAction},
		{"action: wishlist", "retail", []string{"Add the blue kettle to my wishlist."}, inception.TypeUnsupportedAction},
		{"action: gift wrap", "retail", []string{"Can you gift-wrap my order #W1234567?"}, inception.TypeUnsupportedAction},
		{"action: vegetarian meal", "airline", []string{"I need a vegetarian meal on HAT123."}, inception.TypeUnsupportedAction},
		{"action: polite indirection", "airline", []string{"Hi", "How can I help?", "I'd love it if you could get me into the lounge before my flight."}, inception.TypeUnsupportedAction},
		{"action: phone number at the retailer", "retail", []string{"Please update my phone number to 214-555-0199."}, inception.TypeUnsupportedAction},
		{"no action: baggage is supported", "airline", []string{"I want to add a checked bag to ABC123."}, ""},
		{"no action: seats available question", "airline", []string{"Are there seats available on May 20?"}, ""},

		// unsupported_parameter: supported action, value outside the tool's enum.
		{"parameter: first class", "airline", []string{"Upgrade ABC123 to first class."}, inception.TypeUnsupportedParameter},
		{"parameter: premium economy", "airline", []string{"Hi", "How can I help?", "Book me in premium economy please."}, inception.TypeUnsupportedParameter},
		{"parameter: paypal at the airline", "airline", []string{"Can I pay with PayPal for the change?"}, inception.TypeUnsupportedParameter},
		{"parameter: venmo at the retailer", "retail", []string{"I'd like to pay with Venmo instead."}, inception.TypeUnsupportedParameter},
		{"parameter: answer to the agent's payment question", "airline", []string{"Hi", "The total is $820. How would you like to pay?", "Venmo works for me."}, inception.TypeUnsupportedParameter},
		{"parameter: a card not on the profile", "airline", []string{"Use my new card for the baggage fee, it's not on my profile yet."}, inception.TypeUnsupportedParameter},
		{"no parameter: paypal at the retailer", "retail", []string{"Please refund to my PayPal."}, ""},
		{"no parameter: business class exists", "airline", []string{"Upgrade ABC123 to business class."}, ""},
		{"no parameter: negated", "airline", []string{"I don't want first class, just economy."}, ""},
		{"no parameter: paypal without payment context", "airline", []string{"My email is at paypal dot com, anyway cancel ABC123."}, ""},

		// unsupported_domain: outside the service altogether.
		{"domain: hotel at airline", "airline", []string{"Can you also book me a hotel in Boston?"}, inception.TypeUnsupportedDomain},
		{"domain: rental car at airline", "airline", []string{"I need a rental car when I land."}, inception.TypeUnsupportedDomain},
		{"domain: flight at retailer", "retail", []string{"Can you book a flight to Paris for me?"}, inception.TypeUnsupportedDomain},
		{"no domain: flight at airline", "airline", []string{"Can you book a flight to Paris for me?"}, ""},

		// clean
		{"clean: greeting", "airline", []string{"Hi! I'd like to book a one-way flight from New York to Seattle on May 20."}, ""},
		{"clean: user id", "retail", []string{"Hi", "Please give me your email.", "It's sara.doe@example.com"}, ""},
		{"unknown domain still judges ambiguity", "bank", []string{"Cancel that one."}, inception.TypeAnaphora},
	}
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := inception.Input{Tenant: "acme", Domain: tc.domain, Dialogue: inceptiontest.Dialogue(tc.dialogue...)}
			if tc.domain != "bank" {
				in.Tools = inceptiontest.MiniTools(t, tc.domain)
			}
			d := inceptiontest.JudgeAs(t, m, in, tc.want)
			if d.Rein {
				et := inceptiontest.MustType(t, d.ErrorType)
				if d.Evidence == "" || d.Reasoning != planted.RenderPlan(et.RecoveryPlan, d.Evidence) || d.RecoveryTool != et.RecoveryTool || d.Category != et.Category {
					t.Errorf("decision %+v", d)
				}
			}
			if d.TaxonomyVersion != "rein-default-1" || d.Failed || d.Model != "" {
				t.Errorf("decision %+v", d)
			}
		})
	}
}

func TestRulesParameterNeedsToolSchema(t *testing.T) {
	m, _ := New(Config{})
	// Without the agent's tools there is no cabin parameter to compare to.
	d, _ := m.Detect(context.Background(), inception.Input{Domain: "airline", Dialogue: inceptiontest.Dialogue("Upgrade ABC123 to first class.")})
	if d.Rein {
		t.Fatalf("activated without tool schemas: %+v", d)
	}
	// A catalogue whose cabin enum includes first_class accepts it.
	tools := inceptiontest.MiniTools(t, "airline")
	tools[1].Parameters = []byte(`{"type":"object","properties":{"cabin":{"type":"string","enum":["economy","first_class"]}}}`)
	d, _ = m.Detect(context.Background(), inception.Input{Domain: "airline", Tools: tools, Dialogue: inceptiontest.Dialogue("Upgrade ABC123 to first class.")})
	if d.Rein {
		t.Fatalf("activated although the tools accept first_class: %+v", d)
	}
}

func TestRulesHeldOutAndModes(t *testing.T) {
	if _, err := New(Config{Mode: "sloppy"}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("bad mode: %v", err)
	}
	recall, _ := New(Config{Mode: Recall})
	precise, _ := New(Config{})
	in := inception.Input{Domain: "airline", Tools: inceptiontest.MiniTools(t, "airline"), Dialogue: inceptiontest.Dialogue("Hi", "Your reservation ABC123 is ready.", "Actually, can you cancel those?")}
	dp, _ := precise.Detect(context.Background(), in)
	dr, _ := recall.Detect(context.Background(), in)
	if dp.Rein || !dr.Rein {
		t.Fatalf("precise %+v, recall %+v: recall must let through what precise holds back", dp, dr)
	}
	if _, err := precise.Detect(context.Background(), inception.Input{}); !errors.Is(err, inception.ErrInvalidInput) {
		t.Errorf("empty input: %v", err)
	}
}

// Benchmark: a typical mid-conversation turn and a turn with cues that
// trigger the antecedent scan. The budget is 20 µs per turn.
func BenchmarkRules(b *testing.B) {
	m, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	tools := inceptiontest.MiniTools(b, "airline")
	agent := "I found two reservations under your profile: ABC123 from Boston (BOS) to Denver (DEN) on 2024-05-20 in economy, and XYZ789 from Denver to Seattle on 2024-05-22 in business, booked with credit_card_7815826. Which one would you like to change, and would you like to keep the same cabin?"
	cases := map[string]inception.Input{
		"clean":  {Domain: "airline", Tools: tools, Dialogue: inceptiontest.Dialogue("Hi, I need to change a flight.", agent, "I'd like to move the Denver to Seattle flight to May 24, same cabin, and pay the difference with my credit card ending in 7815.")},
		"cued":   {Domain: "airline", Tools: tools, Dialogue: inceptiontest.Dialogue("Hi, I need to change a flight.", agent, "Change that one to the later flight, please.")},
		"recall": {Domain: "airline", Tools: tools, Dialogue: inceptiontest.Dialogue("Hi, I need to change a flight.", agent, "Actually, either is fine, I'm not sure which one.")},
	}
	for name, in := range cases {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Detect(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRulesClean is the rules module's cost on a clean turn (the
// budget is a benchmark figure, never a timed test: `go test -run x
// -bench RulesClean ./inception/`).
func BenchmarkRulesClean(b *testing.B) {
	m, _ := New(Config{})
	in := inception.Input{Domain: "airline", Tools: inceptiontest.MiniTools(b, "airline"), Dialogue: inceptiontest.Dialogue(
		"Hi, I need to change a flight.",
		"I found two reservations: ABC123 (Boston to Denver) and XYZ789 (Denver to Seattle). Which one would you like to change?",
		// Clean: "the Boston one" picks one of the two ("that one to the
		// later flight" would not: the words after it name neither).
		"Change the Boston one to the later flight on May 24, and pay the difference with my credit card ending in 7815.")}
	ctx := context.Background()
	for b.Loop() {
		_, _ = m.Detect(ctx, in)
	}
}

// TestRulesCatalogueDecides: an operation the domain notes call
// unsupported is no tool gap for a catalogue whose tools name it, and a
// parameter value is judged against the enum the catalogue declares.
func TestRulesCatalogueDecides(t *testing.T) {
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ask := inceptiontest.Dialogue("Can I pick a window seat on my flight?")
	d, _ := m.Detect(context.Background(), inception.Input{Domain: "airline", Tools: inceptiontest.MiniTools(t, "airline"), Dialogue: ask})
	if d.ErrorType != inception.TypeUnsupportedAction {
		t.Fatalf("default catalogue: %+v", d)
	}
	withSeats := append(inceptiontest.MiniTools(t, "airline"), llm.Tool{Name: "select_seat", Description: "Assign a seat to a passenger.", Parameters: []byte(`{"type":"object"}`)})
	if d, _ = m.Detect(context.Background(), inception.Input{Domain: "airline", Tools: withSeats, Dialogue: ask}); d.Rein {
		t.Fatalf("a catalogue that assigns seats: %+v", d)
	}
	// flight_type's enum (one_way, round_trip) is in the full catalogue
	// only: a multi-city trip is judged against it.
	multi := inceptiontest.Dialogue("Book me a multi-city trip: Boston to LA, then LA to Seattle.")
	if d, _ = m.Detect(context.Background(), inception.Input{Domain: "airline", Tools: inceptiontest.MiniTools(t, "airline"), Dialogue: multi}); d.Rein {
		t.Fatalf("no flight_type in the mini catalogue, yet: %+v", d)
	}
	if d, _ = m.Detect(context.Background(), inception.Input{Domain: "airline", Tools: inceptiontest.DomainTools(t, "airline"), Dialogue: multi}); d.ErrorType != inception.TypeUnsupportedParameter {
		t.Fatalf("multi-city against the full catalogue: %+v", d)
	}
}

// TestRulesDefaultCatalogueCoversNoGroup keeps the domain notes' objects
// apart from the words of the τ-bench tool descriptions: an object word
// found there would switch its whole group off.
func TestRulesDefaultCatalogueCoversNoGroup(t *testing.T) {
	m, _ := New(Config{})
	for _, domain := range []string{"airline", "retail"} {
		dr := m.domains[domain]
		cov := coveredActions(dr, inceptiontest.DomainTools(t, domain))
		for i, c := range cov {
			if c {
				t.Errorf("%s: unsupported action group %d (%v) is covered by the catalogue", domain, i, dr.actions[i].objects)
			}
		}
	}
}

// A provider's own ambiguity type is judged by its cues in both modes.
func TestRulesCustomAmbiguityType(t *testing.T) {
	doc := strings.Replace(string(inception.DefaultTaxonomyYAML()), "error_types:\n", `error_types:
  - name: vague_time
    category: ambiguous
    definition: The user gives a time that fits morning and evening.
    recovery_plan: The time "{evidence}" is unclear; I will call ambiguity_report and ask.
    recovery_tool: ambiguity_report
    cues: ['\bat (?:five|six|seven) o.?clock\b']
`, 1)
	tax, err := inception.ParseTaxonomy("custom.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{Precise, Recall} {
		m, err := New(Config{Taxonomy: tax, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := m.Detect(context.Background(), inception.Input{Domain: "airline", Dialogue: inceptiontest.Dialogue("Move my flight to tomorrow at five o'clock.")})
		if d.ErrorType != "vague_time" {
			t.Errorf("%s: %+v", mode, d)
		}
	}
}

// The rules module judges from memory: the detector runs it without a
// deadline (inception.Instant).
var _ inception.Instant = (*Module)(nil)
