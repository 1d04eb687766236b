package rules

import (
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

func TestRulesPassengerCounts(t *testing.T) {
	const asked = "Sure. How many passengers will be travelling?"
	const names = "Great. Please give me the full names and dates of birth of the passengers."
	cases := []struct {
		name     string
		dialogue []string
		want     string // "" = no activation
	}{
		{"a stated total against the people counted", []string{"Book Denver to Austin on the 12th for me and my two kids, so 2 passengers total. Economy."}, inception.TypeContradiction},
		{"a total after the party", []string{"I need a flight to Reno for me, my wife and my son, 2 passengers in total"}, inception.TypeContradiction},
		{"two of us, then three names", []string{"Book a round trip to Miami, just the two of us", names, "Ana Ruiz 1980-01-02, Leo Ruiz 1979-03-04 and our son Tim Ruiz 2010-05-06"}, inception.TypeContradiction},
		{"just me, then the husband put on it", []string{"I need a one way to Newark", asked, "just me, it's a work trip", "Economy one way for one passenger. Your full name and date of birth?", "Mia Chen, 1990-07-02. And put my husband on it as well please, he's Joe Chen"}, inception.TypeContradiction},
		{"three people, then a total of two", []string{"I'm flying with my wife and my daughter", "Which dates?", "the 3rd, 2 passengers please"}, inception.TypeContradiction},

		// Allowed corrections and counts that agree.
		{"the counts agree", []string{"Book Denver to Austin for me and my two kids, 3 passengers, economy."}, ""},
		{"a corrected count", []string{"Book a trip for me and my two kids, 2 passengers, sorry, I mean 3 passengers."}, ""},
		{"an earlier count corrected", []string{"book me a flight to Reno", asked, "just me", "Any bags?", "actually, add my husband too, he's coming after all"}, ""},
		{"names matching the count", []string{"Book a round trip to Miami, just the two of us", names, "Ana Ruiz 1980-01-02 and Leo Ruiz 1979-03-04"}, ""},
		{"a party of unsaid size", []string{"for me and my kids, 3 passengers"}, ""},
		{"bags are no passengers", []string{"it's just the two of us", "How many bags?", "a total of 3 bags, please"}, ""},
		{"a relative already counted", []string{"a flight for me and my wife", "Which cabin?", "economy, and add my wife's bag too"}, ""},
	}
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := inception.Input{Tenant: "acme", Domain: "airline", Dialogue: inceptiontest.Dialogue(tc.dialogue...), Tools: inceptiontest.MiniTools(t, "airline")}
			inceptiontest.JudgeAs(t, m, in, tc.want)
			if tc.want != "" && len(tc.dialogue) > 1 && !m.NeedsContext(in) {
				t.Error("NeedsContext = false for a count judged against an earlier turn")
			}
		})
	}
}

func TestRulesSizeAgainstDirection(t *testing.T) {
	cases := []struct {
		name     string
		dialogue []string
		want     string
	}{
		{"smaller, then a larger size", []string{"Hi", "The Fleece Jacket in #W1234567 is size M, black.", "it's too big on me, can I swap it for a smaller size? XL please"}, inception.TypeContradiction},
		{"too big earlier, then a larger number", []string{"my boots from #W1234567 are too big", "Your order shows Hiking Boots in size 9. Exchange for a different size?", "yes, swap them for a size 10"}, inception.TypeContradiction},
		{"too small, then a larger size", []string{"Hi", "The Fleece Jacket in #W1234567 is size M, black.", "it's too small, could I get it in XL?"}, ""},
		{"smaller, then a smaller size", []string{"Hi", "The Fleece Jacket in #W1234567 is size L, black.", "a smaller size please, size M"}, ""},
		{"corrected", []string{"Hi", "The Fleece Jacket in #W1234567 is size M, black.", "too big, so XL, sorry I mean S"}, ""},
		{"several sizes stated", []string{"Hi", "Your order has a T-Shirt in size M and a Jacket in size L.", "the shirt is too big, size L for the jacket stays, so make the shirt XL"}, ""},
	}
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := inception.Input{Tenant: "acme", Domain: "retail", Dialogue: inceptiontest.Dialogue(tc.dialogue...), Tools: inceptiontest.MiniTools(t, "retail")}
			inceptiontest.JudgeAs(t, m, in, tc.want)
			if tc.want != "" && !m.NeedsContext(in) {
				t.Error("NeedsContext = false for a size judged against the agent's")
			}
		})
	}
}
