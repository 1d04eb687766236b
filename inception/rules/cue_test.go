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
	fixed := len(texts) // every prefilter runs on these; the module's index on the recorded turns
	if tb := taubenchDirOrEmpty(t); tb != "" {
		for _, dlg := range inceptiontest.TrajectoryTurns(t) {
			texts = append(texts, dlg[len(dlg)-1].Text)
		}
	}
	type moduleCues struct {
		m   *Module
		all []*cue
	}
	var mods []moduleCues
	for _, mode := range []string{Precise, Recall} {
		m, err := New(Config{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		mc := moduleCues{m, m.indexedCues()}
		for _, c := range mc.all {
			if c.lits != nil && c.ix != m.lits {
				t.Fatalf("cue %q is left out of the module's literal index", c.re)
			}
		}
		mods = append(mods, mc)
	}
	checked := 0
	for i, text := range texts {
		lower := strings.ToLower(text)
		for _, mc := range mods {
			// The module's index, bigrams alone, and a scan of a longer
			// text holding this one (as badPhrase reads a tail).
			var indexed, plain, outer textScan
			indexed.scan(lower, mc.m.lits)
			plain.scan(lower, nil)
			outer.scan("seat upgrade price match either "+lower, mc.m.lits)
			scans := []*textScan{&indexed}
			if i < fixed {
				scans = append(scans, &plain, &outer, nil)
			}
			for _, c := range mc.all {
				want := c.re.MatchString(lower)
				for _, sc := range scans {
					if got := c.find(lower, sc) != nil; got != want {
						t.Fatalf("cue %q on %q: prefiltered %v, plain %v (lits %q left %v right %v)", c.re, lower, got, want, c.lits, c.left, c.right)
					}
				}
				checked++
			}
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

// TestFastREPrefilterIsExact: every expression's prefilter, the one-pass
// literal group included, lets through each text its regexp matches, and
// on every recorded τ-bench message the group answers as a search for
// each literal would.
func TestFastREPrefilterIsExact(t *testing.T) {
	texts := []string{"", "x", "ab", "put my husband on it too", "just me and my wife, two passengers",
		"the two of us", "i'd like to add my son as well", "only myself", "yes, that's right: 3 bags"}
	fixed := len(texts) // the regexps run on these; the recorded turns check the groups
	if tb := taubenchDirOrEmpty(t); tb != "" {
		for _, dlg := range inceptiontest.TrajectoryTurns(t) {
			for _, u := range dlg {
				texts = append(texts, strings.ToLower(u.Text))
			}
		}
	}
	grouped := 0
	for _, f := range fastREs {
		if f.many != nil {
			grouped++
		}
		for i, s := range texts {
			if i < fixed && f.re.MatchString(s) && !f.may(s) {
				t.Fatalf("%q matches %q but its prefilter says no", f.re, s)
			}
			if f.many == nil {
				continue
			}
			want := false
			for _, l := range f.lits {
				want = want || strings.Contains(s, l)
			}
			if got := f.many.any(s); got != want {
				t.Fatalf("literals of %q in %q: group %v, searches %v", f.re, s, got, want)
			}
		}
	}
	if grouped == 0 {
		t.Fatal("no expression has a literal group")
	}
	t.Logf("%d expressions (%d grouped), %d texts", len(fastREs), grouped, len(texts))
}

// TestTextScanAnyIn: the range test of a scan's literal bits, across and
// within words.
func TestTextScanAnyIn(t *testing.T) {
	for _, tc := range []struct {
		set    []int
		lo, hi int
		want   bool
	}{
		{nil, 0, 64, false}, {[]int{0}, 0, 1, true}, {[]int{0}, 1, 64, false}, {[]int{63}, 0, 63, false},
		{[]int{63}, 63, 64, true}, {[]int{64}, 0, 64, false}, {[]int{64}, 60, 70, true}, {[]int{130}, 65, 130, false},
		{[]int{130}, 65, 131, true}, {[]int{5, 200}, 6, 200, false}, {[]int{5, 200}, 6, 201, true},
	} {
		var sc textScan
		for _, id := range tc.set {
			sc.has[id>>6] |= 1 << (id & 63)
		}
		if got := sc.anyIn(tc.lo, tc.hi); got != tc.want {
			t.Errorf("bits %v, ids [%d, %d): got %v, want %v", tc.set, tc.lo, tc.hi, got, tc.want)
		}
	}
}
