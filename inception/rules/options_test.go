package rules

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// testCatalogue is a small invented store in the τ-bench products.json
// shape: three products, a few variants each.
const testCatalogue = `{
 "1": {"name": "Trail Shoes", "variants": {
   "11": {"options": {"size": "8", "color": "black", "material": "mesh", "sole": "rubber"}},
   "12": {"options": {"size": "9", "color": "white", "material": "leather", "sole": "EVA"}},
   "13": {"options": {"size": "10", "color": "black", "material": "mesh", "sole": "EVA"}}}},
 "2": {"name": "Laptop", "variants": {
   "21": {"options": {"ram": "8GB", "storage": "256GB SSD", "color": "silver"}},
   "22": {"options": {"ram": "16GB", "storage": "1TB SSD", "color": "space grey"}}}},
 "3": {"name": "Tablet", "variants": {
   "31": {"options": {"storage": "64GB", "color": "gold"}},
   "32": {"options": {"storage": "128GB", "color": "black"}}}},
 "4": {"name": "Electric Kettle", "variants": {
   "41": {"options": {"capacity": "1L", "color": "white"}},
   "42": {"options": {"capacity": "1.5L", "color": "black"}}}},
 "5": {"name": "T-Shirt", "variants": {
   "51": {"options": {"size": "M", "color": "red"}},
   "52": {"options": {"size": "XL", "color": "blue"}}}}
}`

func optionRulesModule(t *testing.T, withCatalogue bool) *Module {
	t.Helper()
	cfg := Config{}
	if withCatalogue {
		pc, err := ParseProductCatalogue("retail", []byte(testCatalogue))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Products = pc
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRulesProductOptions(t *testing.T) {
	const order = "Your order #W1234567 has the Laptop (8GB RAM, 256GB SSD, silver) and the Tablet (64GB, gold)."
	cases := []struct {
		name     string
		dialogue []string
		want     string // "" = no activation
		values   string // words the reasoning must name
	}{
		{"a size the shoes do not come in", []string{"I'd like to exchange my trail shoes from #W1234567 for size 11, same color."}, inception.TypeUnsupportedParameter, "10, 8, 9"},
		{"a bare size after the product", []string{"The trail shoes in #W1234567 are a 10 and too tight. Could you swap them for an 11?"}, inception.TypeUnsupportedParameter, "10, 8, 9"},
		{"RAM the laptop does not come in", []string{"Can you upgrade the laptop in #W1234567 to 64GB of RAM?"}, inception.TypeUnsupportedParameter, "8GB"},
		{"a capacity in other units, product from the agent", []string{"Hi", "The Electric Kettle in #W1234567 is 1L, white. Which option would you like instead?", "a 3 liter one please"}, inception.TypeUnsupportedParameter, "1.5L, 1L"},
		{"a colour of another product", []string{"Please exchange my t-shirt for a gold one."}, inception.TypeUnsupportedParameter, "blue, red"},
		{"a letter size beyond the range", []string{"exchange my t-shirt for XXXL please"}, inception.TypeUnsupportedParameter, "M, XL"},

		// Hard negatives.
		{"a size that exists", []string{"I'd like to exchange my trail shoes for size 9, same color."}, "", ""},
		{"a capacity that exists, in litres", []string{"Hi", "The Electric Kettle in #W1234567 is 1L, white. Which option would you like instead?", "the 1.5 liter one please"}, "", ""},
		{"the value belongs to another product in play", []string{"Hi", order, "I'd like the 128GB version please."}, "", ""},
		{"a colour word in a name, a street and a product name", []string{"I'm Anya Brown, 399 Maple Drive, and I want to exchange my t-shirt and the fleece jacket for size XL."}, "", ""},
		{"both products named, the value fits one", []string{"Hi", order, "exchange the laptop for 16GB and the tablet for 128GB"}, "", ""},
		{"a value of a part, not the material", []string{"swap my trail shoes for the black ones, same size 9, mesh, rubber sole"}, "", ""},
		{"a quantity, a price and an id", []string{"I want to exchange 2 items from #W1234567, the laptop cost $64 and I need it for 11 days"}, "", ""},
		{"a negated value", []string{"exchange the laptop please, not 64GB, the 16GB one"}, "", ""},
		{"no product in play", []string{"I want 64GB please."}, "", ""},
		{"an option kind the product lacks", []string{"can you exchange my t-shirt for a 64GB one"}, "", ""},
	}
	m := optionRulesModule(t, true)
	plain := optionRulesModule(t, false)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := inception.Input{Tenant: "acme", Domain: "retail", Dialogue: inceptiontest.Dialogue(tc.dialogue...), Tools: inceptiontest.MiniTools(t, "retail")}
			d := inceptiontest.JudgeAs(t, m, in, tc.want)
			if tc.want != "" {
				if d.Evidence == "" || !strings.Contains(d.Reasoning, tc.values) {
					t.Errorf("evidence %q, reasoning %q: want the values %q named", d.Evidence, d.Reasoning, tc.values)
				}
				// Without a catalogue the rules behave as before: the
				// value is not checked.
				if pd, _ := plain.Detect(context.Background(), in); pd.Rein {
					t.Errorf("without a catalogue: %+v", pd)
				}
				// Airline dialogues never read the retail catalogue.
				in.Domain = "airline"
				in.Tools = inceptiontest.MiniTools(t, "airline")
				if ad, _ := m.Detect(context.Background(), in); ad.ErrorType == inception.TypeUnsupportedParameter && strings.Contains(ad.Reasoning, "store's") {
					t.Errorf("airline read the catalogue: %+v", ad)
				}
			}
		})
	}
}

// TestRulesProductOptionsNeedContext: a value whose product only the
// agent's message names needs the dialogue (the detector stage must not
// judge the turn alone).
func TestRulesProductOptionsNeedContext(t *testing.T) {
	m := optionRulesModule(t, true)
	in := inception.Input{Tenant: "acme", Domain: "retail", Tools: inceptiontest.MiniTools(t, "retail"),
		Dialogue: inceptiontest.Dialogue("Hi", "The Electric Kettle in #W1234567 is 1L, white. Which option would you like instead?", "a 3 liter one please")}
	if !m.NeedsContext(in) {
		t.Error("NeedsContext = false for a value only the dialogue's product frames")
	}
	named := inception.Input{Tenant: "acme", Domain: "retail", Tools: inceptiontest.MiniTools(t, "retail"),
		Dialogue: inceptiontest.Dialogue("I'd like to exchange my trail shoes from #W1234567 for size 11, same color.")}
	if m.NeedsContext(named) {
		t.Error("NeedsContext = true for a product and value both in the turn")
	}
}

func TestParseProductCatalogue(t *testing.T) {
	pc, err := ParseProductCatalogue("retail", []byte(testCatalogue))
	if err != nil {
		t.Fatal(err)
	}
	if len(pc.Products) != 5 || pc.Products[0].Name != "Trail Shoes" || strings.Join(pc.Products[0].Options["size"], ",") != "10,8,9" {
		t.Fatalf("catalogue %+v", pc.Products[0])
	}
	if !strings.Contains(strings.Join(pc.Products[0].Words, "|"), "shoes") || !strings.Contains(strings.Join(pc.Products[4].Words, "|"), "tshirt") {
		t.Errorf("words %v %v", pc.Products[0].Words, pc.Products[4].Words)
	}
	for _, bad := range []string{`[]`, `{"1": {"name": "", "variants": {}}}`, `{`} {
		if _, err := ParseProductCatalogue("retail", []byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	dir := t.TempDir()
	if _, err := LoadProductCatalogue(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("missing file: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "retail"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "retail", "products.json"), []byte(testCatalogue), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "retail")} {
		if pc, err := LoadProductCatalogue(d); err != nil || len(pc.Products) != 5 {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// TestRulesProductOptionsOnTaskInstructions runs the option check over the
// τ-bench retail task instructions (train and dev), whose exchanges and
// modifications ask for variants that exist: each activation there is a
// false alarm, and the check must stay (almost) silent.
func TestRulesProductOptionsOnTaskInstructions(t *testing.T) {
	dir := taubenchDir(t)
	pc, err := LoadProductCatalogue(dir)
	if err != nil {
		t.Fatal(err)
	}
	or := compileOptions(pc)
	var n, fired int
	for _, split := range []string{"train", "dev"} {
		data, err := os.ReadFile(filepath.Join(dir, "retail", "tasks_"+split+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var tasks []struct {
			Instruction string `json:"instruction"`
		}
		if err := json.Unmarshal(data, &tasks); err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			n++
			lower := strings.ToLower(task.Instruction)
			if mm, _ := or.check(inception.Input{Domain: "retail", Dialogue: inceptiontest.Dialogue(task.Instruction)}, lower); mm.loc != nil {
				fired++
				t.Logf("fired: %s ← %q", mm.note(), sentenceAround(lower, mm.loc[0], mm.loc[1]))
			}
		}
	}
	t.Logf("option check fired on %d of %d retail task instructions", fired, n)
	if n == 0 || float64(fired) > 0.02*float64(n) {
		t.Errorf("option check fired on %d of %d task instructions, want at most 2%%", fired, n)
	}
}
