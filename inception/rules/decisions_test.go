package rules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// TestDecisionsUnchanged pins every answer the module gives on every user
// turn of τ-bench's 200 recorded airline conversations and on every
// dialogue of the corpus's dev splits, in the three configurations rein
// runs (precise alone, precise with the typed classifier and the product
// catalogue, the cascade's gate with its classifier): NeedsContext on the
// user's turns alone and on the whole dialogue, then Detect on the whole
// one. A change made for speed must leave the golden file as it is; one
// meant to change decisions rewrites it with -update and says why.
// The file holds a hash per conversation (every user turn of it), no
// dialogue text.
func TestDecisionsUnchanged(t *testing.T) {
	products := testProducts(t)
	var mods []*Module
	for _, cfg := range []Config{
		{},
		{TypedModel: learned.DefaultTypedModel(), Products: products},
		{Mode: Recall, GateModel: learned.DefaultGateModel(), Products: products},
	} {
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, m)
	}
	ctx := context.Background()
	var out strings.Builder
	judge := func(h hash.Hash, whole inception.Input) {
		var alone inception.Input = whole
		alone.Dialogue = nil
		for _, u := range whole.Dialogue {
			if u.Role == inception.RoleUser {
				alone.Dialogue = append(alone.Dialogue, u)
			}
		}
		for _, m := range mods {
			d, err := m.Detect(ctx, whole)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%t %t %s\n", m.NeedsContext(alone), m.NeedsContext(whole), b)
		}
	}
	line := func(name string, h hash.Hash) {
		fmt.Fprintf(&out, "%s %s\n", name, hex.EncodeToString(h.Sum(nil))[:16])
	}
	// The race detector makes the whole run take minutes: it then checks
	// every eighth conversation against its line of the golden file.
	every, n := 1, 0
	if raceEnabled {
		every = 8
	}
	tools := inceptiontest.DomainTools(t, "airline")
	for i, dlg := range inceptiontest.TrajectoryTurns(t) {
		if n++; n%every != 0 {
			continue
		}
		h := sha256.New()
		for j, u := range dlg {
			if u.Role == inception.RoleUser {
				judge(h, inception.Input{Tenant: "t", Domain: "airline", Tools: tools, Dialogue: dlg[:j+1]})
			}
		}
		line(fmt.Sprintf("trajectory-%03d", i), h)
	}
	for _, ex := range inceptiontest.Corpus(t, "dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8", "dev9") {
		if n++; n%every != 0 {
			continue
		}
		h := sha256.New()
		judge(h, ex.Input)
		line(ex.ID, h)
	}
	if every == 1 {
		testutil.Golden(t, "decisions.golden", []byte(out.String()))
		return
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "decisions.golden"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, l := range strings.Split(string(golden), "\n") {
		want[l] = true
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, l := range got {
		if !want[l] {
			t.Errorf("decision hash %q is not in testdata/decisions.golden", l)
		}
	}
	t.Logf("race detector on: %d of %d conversations checked", len(got), n)
}
