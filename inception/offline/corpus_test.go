package offline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// The labelled detection corpus (testdata/corpus/README.md). These tests check
// its format and its shape only; they never judge a dialogue, so they stay
// valid whatever the inception modules do.

const (
	corpusMinTotal     = 300
	corpusMinTestShare = 0.30
	corpusMinPerType   = 25
)

var (
	// dev2 to dev9 are held-aside sets written later on the dev side
	// (dev9 was test until issue 37, when it had been scored after every
	// tuning pass; test is now a set written blind for that issue): the
	// test share is measured against dev and test.
	corpusSplits     = []string{"dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8", "dev9", "test"}
	corpusDomains    = []string{"airline", "retail"}
	corpusErrorTypes = []string{
		"anaphora", "multiple_interpretation", "contradiction",
		"unsupported_action", "unsupported_parameter", "unsupported_domain",
	}
)

// validateCorpusDialogue returns every format problem of one dialogue.
func validateCorpusDialogue(d inceptiontest.CorpusDialogue) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if strings.TrimSpace(d.ID) == "" {
		bad("empty id")
	}
	if !slices.Contains(corpusDomains, d.Domain) {
		bad("domain %q is not one of %v", d.Domain, corpusDomains)
	}
	if len(d.Messages) == 0 {
		bad("no messages")
	}
	for i, m := range d.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			bad("message %d: role %q is not user or assistant", i, m.Role)
		}
		if strings.TrimSpace(m.Content) == "" {
			bad("message %d: empty content", i)
		}
	}
	if n := len(d.Messages); n > 0 && d.Messages[n-1].Role != "user" {
		bad("last message is %q, not the judged user turn", d.Messages[n-1].Role)
	}
	switch {
	case d.Label == nil:
		bad("no label")
	case d.Label.Rein == nil || d.Label.ErrorType == nil:
		bad("label needs both rein and error_type")
	case *d.Label.Rein && !slices.Contains(corpusErrorTypes, *d.Label.ErrorType):
		bad("rein is true but error_type %q is not one of %v", *d.Label.ErrorType, corpusErrorTypes)
	case !*d.Label.Rein && *d.Label.ErrorType != "":
		bad("rein is false but error_type is %q", *d.Label.ErrorType)
	}
	return errs
}

// corpusClass is a dialogue's error type, or "clean" for a turn without error.
func corpusClass(d inceptiontest.CorpusDialogue) string {
	if d.Label == nil || d.Label.ErrorType == nil || *d.Label.ErrorType == "" {
		return "clean"
	}
	return *d.Label.ErrorType
}

// validateCorpus checks what must hold across both splits together.
func validateCorpus(splits map[string][]inceptiontest.CorpusDialogue) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	seenID := map[string]string{}
	seenDialogue := map[string]string{}
	perType := map[string]int{}
	perSplitType := map[string]map[string]int{}
	perSplitDomain := map[string]map[string]int{}
	total := 0
	for _, split := range corpusSplits {
		perSplitType[split] = map[string]int{}
		perSplitDomain[split] = map[string]int{}
		for _, d := range splits[split] {
			total++
			where := fmt.Sprintf("%s/%s", split, d.ID)
			for _, err := range validateCorpusDialogue(d) {
				bad("%s: %w", where, err)
			}
			if prev, ok := seenID[d.ID]; ok {
				bad("id %q in %s and in %s", d.ID, prev, split)
			}
			seenID[d.ID] = split
			// The same conversation under two ids would leak test into dev.
			body, err := json.Marshal(d.Messages)
			if err != nil {
				bad("%s: %w", where, err)
			}
			if prev, ok := seenDialogue[string(body)]; ok {
				bad("%s repeats the messages of %s", where, prev)
			}
			seenDialogue[string(body)] = where
			class := corpusClass(d)
			perType[class]++
			perSplitType[split][class]++
			perSplitDomain[split][d.Domain]++
		}
	}
	if total < corpusMinTotal {
		bad("%d dialogues, want at least %d", total, corpusMinTotal)
	}
	if total > 0 {
		v1 := len(splits["dev"]) + len(splits["test"])
		if share := float64(len(splits["test"])) / float64(v1); v1 > 0 && share < corpusMinTestShare {
			bad("test holds %.1f%% of the dialogues, want at least %.0f%%", 100*share, 100*corpusMinTestShare)
		}
	}
	for _, typ := range append([]string{"clean"}, corpusErrorTypes...) {
		if perType[typ] < corpusMinPerType {
			bad("%s: %d dialogues in total, want at least %d", typ, perType[typ], corpusMinPerType)
		}
		for _, split := range corpusSplits {
			if perSplitType[split][typ] == 0 {
				bad("%s: none in the %s split", typ, split)
			}
		}
	}
	for _, split := range corpusSplits {
		for _, dom := range corpusDomains {
			if perSplitDomain[split][dom] == 0 {
				bad("domain %s: none in the %s split", dom, split)
			}
		}
	}
	return errs
}

func loadCorpus(t *testing.T) map[string][]inceptiontest.CorpusDialogue {
	t.Helper()
	splits := map[string][]inceptiontest.CorpusDialogue{}
	for _, split := range corpusSplits {
		ds, err := inceptiontest.CorpusSplit(filepath.Join(inceptiontest.CorpusDir(t), split+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		splits[split] = ds
	}
	return splits
}

func TestCorpusFormat(t *testing.T) {
	splits := loadCorpus(t)
	for _, err := range validateCorpus(splits) {
		t.Error(err)
	}
	counts := map[string]int{}
	for _, split := range corpusSplits {
		for _, d := range splits[split] {
			counts[split+" "+d.Domain+" "+corpusClass(d)]++
		}
	}
	sizes := make([]string, 0, len(corpusSplits))
	for _, split := range corpusSplits {
		sizes = append(sizes, fmt.Sprintf("%s %d", split, len(splits[split])))
	}
	t.Logf("%s; per split, domain and class: %v", strings.Join(sizes, ", "), counts)
}

// TestCorpusCleanShare keeps the mix near what users produce: clean turns are
// the largest single class but not the whole corpus.
func TestCorpusCleanShare(t *testing.T) {
	splits := loadCorpus(t)
	clean, total := 0, 0
	for _, split := range corpusSplits {
		for _, d := range splits[split] {
			total++
			if corpusClass(d) == "clean" {
				clean++
			}
		}
	}
	if share := float64(clean) / float64(total); share < 0.35 || share > 0.55 {
		t.Errorf("clean share %.1f%%, want between 35%% and 55%%", 100*share)
	}
}

// TestCorpusValidatorRejects shows each check catches the fault it is for, so a
// green TestCorpusFormat means something.
func TestCorpusValidatorRejects(t *testing.T) {
	good := `{"id":"x-1","domain":"airline","messages":[{"role":"assistant","content":"Hi"},{"role":"user","content":"cancel it"}],"label":{"rein":true,"error_type":"anaphora"}}`
	tests := []struct {
		name, line, want string
	}{
		{"good", good, ""},
		{"bad domain", strings.Replace(good, `"airline"`, `"hotel"`, 1), "domain"},
		{"bad role", strings.Replace(good, `"assistant"`, `"system"`, 1), "role"},
		{"empty content", strings.Replace(good, `"Hi"`, `"  "`, 1), "empty content"},
		{"last turn not user", `{"id":"x","domain":"retail","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"label":{"rein":false,"error_type":""}}`, "last message"},
		{"no messages", `{"id":"x","domain":"retail","messages":[],"label":{"rein":false,"error_type":""}}`, "no messages"},
		{"rein true without type", strings.Replace(good, `"anaphora"`, `""`, 1), "rein is true"},
		{"unknown type", strings.Replace(good, `"anaphora"`, `"sarcasm"`, 1), "rein is true"},
		{"rein false with type", strings.Replace(good, `"rein":true`, `"rein":false`, 1), "rein is false"},
		{"missing label", `{"id":"x","domain":"retail","messages":[{"role":"user","content":"a"}]}`, "no label"},
		{"missing rein", strings.Replace(good, `"rein":true,`, ``, 1), "both rein and error_type"},
		{"empty id", strings.Replace(good, `"x-1"`, `""`, 1), "empty id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d inceptiontest.CorpusDialogue
			if err := json.Unmarshal([]byte(tc.line), &d); err != nil {
				t.Fatal(err)
			}
			errs := validateCorpusDialogue(d)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("valid dialogue rejected: %v", errs)
				}
				return
			}
			if !strings.Contains(errors.Join(errs...).Error()+" ", tc.want) {
				t.Fatalf("errors %v, want one mentioning %q", errs, tc.want)
			}
		})
	}

	t.Run("strict decoding", func(t *testing.T) {
		dir := t.TempDir()
		for name, body := range map[string]string{
			"unknown field": strings.Replace(good, `"label"`, `"lable"`, 1),
			"two values":    good + " {}",
			"blank line":    good + "\n\n" + good,
		} {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".jsonl")
			if err := os.WriteFile(path, []byte(body+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := inceptiontest.CorpusSplit(path); err == nil {
				t.Errorf("%s: loaded without error", name)
			}
		}
	})

	t.Run("corpus-wide checks", func(t *testing.T) {
		var d inceptiontest.CorpusDialogue
		if err := json.Unmarshal([]byte(good), &d); err != nil {
			t.Fatal(err)
		}
		dup := d
		dup.ID = "x-2"
		errs := validateCorpus(map[string][]inceptiontest.CorpusDialogue{"dev": {d}, "test": {d, dup}})
		joined := errors.Join(errs...).Error()
		for _, want := range []string{
			`id "x-1" in dev and in test`, "repeats the messages", "want at least 300",
			"clean: none in the dev split", "domain retail: none in the test split",
			"unsupported_domain: 0 dialogues in total",
		} {
			if !strings.Contains(joined, want) {
				t.Errorf("corpus-wide errors lack %q:\n%s", want, joined)
			}
		}
	})
}
