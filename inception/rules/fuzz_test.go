package rules

import (
	"context"
	"testing"
	"time"

	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/internal/testutil/inceptiontest"

	"github.com/reinception/rein/inception"
)

// FuzzRulesModule: whatever a user and an agent say, the offline modules
// (precise rules with the typed classifier and the store's catalogue, and
// the cascade's recall gate with its classifier) never panic or fail, stay
// fast, and an activation is well formed: a type of the taxonomy with its
// category and recovery tool, a reasoning, and evidence that is empty or a
// quote of what the user said.
func FuzzRulesModule(f *testing.F) {
	f.Add("I have two bookings, ABC123 and DEF456.", "I see ABC123 (JFK to LAX) and DEF456 (SFO to ORD).", "cancel that one", false)
	f.Add("I want to exchange my shoes.", "Your order #W1234567 has Running Shoes size 9 and a T-Shirt.", "make it size 11 in purple, or whichever is cheaper", true)
	f.Add("book me first class", "We have basic economy, economy and business.", "keep it but cancel it... actually no", false)
	f.Add("", "", "can you also get me a hotel and a rental car?", false)
	f.Add("\u00c9t\u00e9", "x\x00y", "\xff\xfe 3 passengers, no 4 ... #W\u00e9", true)
	f.Add("my user id is mia_li_3668", "", "change the 2nd and 3rd one to the blue one", true)
	products := testProducts(f)
	tax := inception.DefaultTaxonomy()
	precise, err := New(Config{TypedModel: learned.DefaultTypedModel(), Products: products})
	if err != nil {
		f.Fatal(err)
	}
	gate, err := New(Config{Mode: Recall, GateModel: learned.DefaultGateModel(), Products: products})
	if err != nil {
		f.Fatal(err)
	}
	airline, retail := inceptiontest.MiniTools(f, "airline"), inceptiontest.MiniTools(f, "retail")
	f.Fuzz(func(t *testing.T, earlier, agent, last string, isRetail bool) {
		in := inception.Input{Tenant: "acme", Domain: "airline", Tools: airline, Dialogue: inceptiontest.Dialogue(earlier, agent, last)}
		if isRetail {
			in.Domain, in.Tools = "retail", retail
		}
		for _, m := range []inception.Module{precise, gate} {
			start := time.Now()
			d, err := m.Detect(context.Background(), in)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("%s took %s on %q", m.Name(), took, last)
			}
			if err != nil {
				t.Fatalf("%s failed: %v", m.Name(), err)
			}
			if p := inceptiontest.DecisionProblem(tax, d, earlier+" "+last); p != "" {
				t.Fatalf("%s: %s", m.Name(), p)
			}
		}
	})
}
