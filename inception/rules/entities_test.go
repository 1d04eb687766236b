package rules

import (
	"strings"
	"testing"
)

// TestAgentCandidates: the entities an agent message puts in play, however
// it lists them.
func TestAgentCandidates(t *testing.T) {
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	air, ret := m.domains["airline"], m.domains["retail"]
	for _, tc := range []struct {
		name   string
		dr     *domainRules
		text   string
		kind   string
		count  int
		prop   string
		fitted int
	}{
		{"ids in prose", air, "You have ABC123 (BOS to DEN, business) and XYZ789 (DEN to SEA, economy).", "", 2, "business", 1},
		{"one reservation, its flights are not candidates", air, "Reservation ABC123 has HAT001 and HAT002.", "", 1, "", 0},
		{"the flights when the reference names them", air, "Reservation ABC123 has HAT001 and HAT002.", "flight", 2, "", 0},
		{"a code without digits", air, "Yes: HDUF3Q (LGA to SEA) and QWPXBF (MCO to PHX).", "", 2, "sea", 1},
		{"bullets", ret, "Order #W1557241 contains:\n- Kettle (1L, black)\n- Kettle (1.5L, silver)\n- Lamp", "", 3, "kettle", 2},
		{"items in a sentence", ret, "Your order #W9348897 contains an action camera, a patio umbrella, a desk lamp and a t-shirt.", "", 4, "lamp", 1},
		{"a read-back is not a list", air, "To confirm: cancel reservation 5HVW7S, reason change of plans. Proceed?", "", 1, "", 0},
		{"nothing listed", air, "How can I help you today?", "", 0, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := agentCandidates(tc.dr, tc.text, tc.kind)
			if c.count() != tc.count {
				t.Errorf("count %d (ids %d, spans %q), want %d", c.count(), c.ids, c.spans, tc.count)
			}
			if tc.prop != "" && c.matching(tc.prop) != tc.fitted {
				t.Errorf("%q fits %d of %q, want %d", tc.prop, c.matching(tc.prop), c.spans, tc.fitted)
			}
		})
	}
}

// TestFindRefsMatchesItsExpression: the word scanner finds what the
// pronounRef expression specifies.
func TestFindRefsMatchesItsExpression(t *testing.T) {
	for _, text := range []string{
		"cancel that one please", "can you change it to the next day", "move the other one to the 29th",
		"just change that flight", "go with that", "what's the status of it", "do it for those two",
		"the other, please", "swap her out on this one", "i want to cancel my reservation", "those options are fine",
	} {
		got := findRefs(text)
		want := pronounRef.FindAllStringIndex(text, -1)
		if len(got) != len(want) {
			t.Errorf("%q: scanner %v, expression %v", text, got, want)
			continue
		}
		for i := range got {
			if strings.Trim(text[got[i][0]:got[i][1]], " ,.!?") != strings.Trim(text[want[i][0]:want[i][1]], " ,.!?") {
				t.Errorf("%q: scanner %q, expression %q", text, text[got[i][0]:got[i][1]], text[want[i][0]:want[i][1]])
			}
		}
	}
}
