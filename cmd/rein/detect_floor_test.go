package main

import (
	"path/filepath"
	"testing"

	rtest "github.com/reinception/rein/internal/testutil"
)

// corpusDir is the labelled corpus in the repository (see its README).
var corpusDir = filepath.Join("..", "..", "inception", "testdata", "corpus")

// evalFloor is the least a split's figures may fall to: a little below
// what the modules measured when the floor was set, so a regression fails
// CI while run-to-run noise (there is none: the rules are deterministic)
// and small, deliberate trade-offs do not.
type evalFloor struct {
	coreRecall, meanRecall, precision float64 // rules module, at least
	cleanFalse                        float64 // rules module, at most
	gateErroneous                     float64 // cascade gate, at least
	gateClean                         float64 // cascade gate, at most
}

// The floors were set from the figures of the rules module and gate of
// issue 22's third pass (dev: core 0.91, mean 0.91, precision 1.00, clean
// 0 %, gate 98.5 % / 36.5 %; dev2: core 1.00, mean 0.93, precision 1.00,
// clean 0 %, gate 98.3 % / 29.2 %; dev3, by a second author and tuned on
// after it was measured once: core 0.82, mean 0.82, precision 1.00, clean
// 0 %, gate 100 % / 28.6 %; test, now dev9: core 0.47, mean 0.47, precision 0.939,
// clean 4.3 %, gate 86.7 % / 39.1 %). The test split was measured once,
// after the rules were final, and never used to tune them; its floors pin
// what it measured, not the targets, which its rules figures do
// not reach.
var evalFloors = map[string]evalFloor{
	"dev":  {coreRecall: 0.92, meanRecall: 0.91, precision: 0.98, cleanFalse: 0.02, gateErroneous: 0.97, gateClean: 0.38},
	"dev2": {coreRecall: 0.97, meanRecall: 0.90, precision: 0.98, cleanFalse: 0.02, gateErroneous: 0.96, gateClean: 0.31},
	"dev3": {coreRecall: 0.85, meanRecall: 0.84, precision: 0.98, cleanFalse: 0.02, gateErroneous: 0.98, gateClean: 0.30},
	// dev4, by a third author, measured before anything was tuned on it:
	// core 0.57, mean 0.54, precision 0.909, clean 7.1 %, gate 91.4 % /
	// 55.4 %; after the fourth pass's precision fixes precision 0.976 and
	// clean 1.8 %, the rest unchanged. With the product catalogue and the
	// passenger counts (dev: core 0.94, mean 0.93; dev3: 0.87, 0.86; dev4:
	// 0.62, 0.64, precision 0.979, clean 1.8 %) the dev floors rose.
	"dev4": {coreRecall: 0.60, meanRecall: 0.62, precision: 0.96, cleanFalse: 0.02, gateErroneous: 0.90, gateClean: 0.56},
	// dev5 to dev8, by a fourth to a seventh author, each measured once
	// before anything was tuned on it. With the pass-4 rules: dev5 core
	// 0.49, mean 0.49, precision 0.956, clean 3.1 %, gate 90.6 % / 48.4 %;
	// dev6 0.57, 0.55, 0.935, 5.3 %, 84.9 % / 40.4 %; dev8 0.54, 0.54,
	// 0.860, 12.1 %, 93.1 % / 63.8 %. With the fifth pass's catalogue and
	// counts (never shown these files): dev5 0.54, 0.53, 0.959, 3.1 %,
	// 91.8 % / 48.4 %; dev6 0.63, 0.60, 0.940, 5.3 %, 86.3 % / 40.4 %; dev7
	// (first measured here) 0.58, 0.54, 0.898, 9.1 %, 83.8 % / 54.5 %; dev8
	// 0.62, 0.61, 0.875, 12.1 %, 95.8 % / 63.8 %; test 0.53, 0.52, 0.944,
	// 4.3 %, 88.3 % / 39.1 %, measured once after the rules were final (that
	// test split is dev9 since issue 37).
	"dev5": {coreRecall: 0.52, meanRecall: 0.51, precision: 0.93, cleanFalse: 0.05, gateErroneous: 0.90, gateClean: 0.50},
	"dev6": {coreRecall: 0.61, meanRecall: 0.58, precision: 0.92, cleanFalse: 0.07, gateErroneous: 0.84, gateClean: 0.42},
	"dev7": {coreRecall: 0.56, meanRecall: 0.52, precision: 0.87, cleanFalse: 0.11, gateErroneous: 0.82, gateClean: 0.56},
	"dev8": {coreRecall: 0.60, meanRecall: 0.59, precision: 0.85, cleanFalse: 0.14, gateErroneous: 0.94, gateClean: 0.66},
	// dev9 was the test split until issue 37; it had been scored after
	// every tuning pass, so it became a dev split and keeps the floor it
	// had as test.
	"dev9": {coreRecall: 0.51, meanRecall: 0.50, precision: 0.92, cleanFalse: 0.05, gateErroneous: 0.86, gateClean: 0.41},
	// test, written blind for issue 37 (248 dialogues) and measured once,
	// on 2026-12-06, with nothing tuned on it: rules core 0.444, mean
	// 0.452, precision 0.968, clean 4.8 % (3 of 62), gate 89.2 % / 59.7 %.
	// The floors sit a little below (one more clean false activation or
	// gate pass on a clean turn is allowed); they pin what it measured, not
	// a target.
	"test": {coreRecall: 0.42, meanRecall: 0.43, precision: 0.94, cleanFalse: 0.07, gateErroneous: 0.87, gateClean: 0.62},
}

// TestDetectEvalCorpusFloors runs rein detect --eval on every file of the
// repository's corpus, as CI does, and fails when a figure falls below its
// floor.
func TestDetectEvalCorpusFloors(t *testing.T) {
	t.Parallel()
	for _, split := range evalSplits {
		floor, ok := evalFloors[split]
		t.Run(split, func(t *testing.T) {
			// Each split is its own CPU-bound run: as separate parallel
			// tests they fill the gaps the waiting process tests leave.
			t.Parallel()
			if !ok {
				t.Fatalf("split %s has no floor: measure it once and set one", split)
			}
			rules := evalSplit(t, split, "rules")
			check := func(name string, got, bound float64, atLeast bool) {
				t.Helper()
				if atLeast && got < bound || !atLeast && got > bound {
					dir := "at least"
					if !atLeast {
						dir = "at most"
					}
					t.Errorf("%s %s: %.3f, want %s %.2f", split, name, got, dir, bound)
				}
			}
			check("rules core-type recall", rules.CoreRecall, floor.coreRecall, true)
			check("rules mean recall", rules.MeanRecall, floor.meanRecall, true)
			check("rules precision", rules.Precision, floor.precision, true)
			check("rules clean false activations", rules.CleanFalseActivation, floor.cleanFalse, false)
			gate := evalSplit(t, split, moduleCascadeGate)
			if gate.Gate == nil {
				t.Fatal("no gate figures")
			}
			check("gate pass on erroneous turns", gate.Gate.ErroneousRate, floor.gateErroneous, true)
			check("gate pass on clean turns", gate.Gate.CleanRate, floor.gateClean, false)
			t.Logf("%s: rules core %.2f mean %.2f precision %.3f clean %.3f; gate %.3f erroneous / %.3f clean",
				split, rules.CoreRecall, rules.MeanRecall, rules.Precision, rules.CleanFalseActivation, gate.Gate.ErroneousRate, gate.Gate.CleanRate)
		})
	}
}

func evalSplit(t *testing.T, split, module string) evalJSON {
	t.Helper()
	// The retail product catalogue from the τ-bench data, as a deployment
	// with a store's data gives it.
	stdout, stderr, err := runDetectCLI(t, "--eval", corpusDir, "--split", split, "--module", module, "--json", "--taubench", rtest.TauBench(t))
	if err != nil {
		t.Fatalf("rein detect --eval %s --split %s --module %s: %v\n%s", corpusDir, split, module, err, stderr)
	}
	rep := decodeEvalJSON(t, stdout)
	if rep.Turns == 0 || rep.Failed != 0 {
		t.Fatalf("%s/%s: %d turns, %d failed", split, module, rep.Turns, rep.Failed)
	}
	return rep
}
