package rules

import (
	"strings"
	"testing"

	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// TestCuePrefilterIsExact: the literal prefilter, bigram map, boundary skip
// and windowing never change whether a cue matches, compared with running
// the plain regexp over the whole text.
func TestCuePrefilterIsExact(t *testing.T) {
	texts := []string{
		"neither of those flights work", "—either way works", "«either» one is fine", "i want to sit in seattle",
		"can i pick a window seat?", "seats", "price-match please", "wi-fi on board", "wifi", "i didn’t say that",
		"yes, go ahead. no wait, don't", "cancel or return", "either", "", "x",
	}
	if tb := taubenchDirOrEmpty(t); tb != "" {
		for _, dlg := range inceptiontest.TrajectoryTurns(t) {
			texts = append(texts, dlg[len(dlg)-1].Text)
		}
	}
	var all []cue
	for _, mode := range []string{Precise, Recall} {
		m, err := New(Config{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range m.cues {
			all = append(all, cs...)
		}
		for _, d := range m.domains {
			for _, a := range d.actions {
				all = append(all, a.cues...)
			}
			all = append(all, d.outside...)
			all = append(all, d.gate...)
		}
	}
	checked := 0
	for _, text := range texts {
		lower := strings.ToLower(text)
		var bg bigrams
		bg.build(lower)
		for i := range all {
			c := &all[i]
			got := c.find(lower, &bg) != nil
			want := c.re.MatchString(lower)
			if got != want {
				t.Fatalf("cue %q on %q: prefiltered %v, plain %v (lits %q left %v right %v)", c.re, lower, got, want, c.lits, c.left, c.right)
			}
			checked++
		}
	}
	t.Logf("%d cue/text pairs agree", checked)
}

// taubenchDirOrEmpty is taubenchDir without skipping.
func taubenchDirOrEmpty(t *testing.T) string {
	var dir string
	t.Run("fixtures", func(t *testing.T) { dir = taubenchDir(t) })
	return dir
}
