package inceptiontest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/testutil"
)

// CorpusDialogue is one line of a split of the labelled corpus
// (inception/testdata/corpus): the dialogue format
// `rein detect` reads (id, domain, messages) plus the gold label and notes.
type CorpusDialogue struct {
	ID       string `json:"id"`
	Domain   string `json:"domain"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Label *struct {
		Rein      *bool   `json:"rein"`
		ErrorType *string `json:"error_type"`
	} `json:"label"`
	Notes string `json:"notes,omitempty"`
}

// CorpusDir returns the labelled corpus's directory.
func CorpusDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(testutil.RepoRoot(t), "inception", "testdata", "corpus")
}

// CorpusSplit decodes one split strictly: unknown fields and trailing
// garbage on a line are errors, so a typo in a key cannot hide a label.
func CorpusSplit(path string) ([]CorpusDialogue, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open corpus split: %w", err)
	}
	defer f.Close()
	var out []CorpusDialogue
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			return nil, fmt.Errorf("%s:%d: empty line", path, line)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var d CorpusDialogue
		if err := dec.Decode(&d); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s:%d: more than one JSON value on the line", path, line)
		}
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// Corpus loads dev splits of the labelled corpus as examples with
// each domain's built-in tool catalogue, as rein detect --eval does. It
// refuses the test split.
func Corpus(t testing.TB, splits ...string) []inception.Example {
	t.Helper()
	tools := map[string][]llm.Tool{}
	var out []inception.Example
	for _, split := range splits {
		if split == "test" {
			t.Fatal("the test split is never trained or tuned on")
		}
		ds, err := CorpusSplit(filepath.Join(CorpusDir(t), split+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if tools[d.Domain] == nil {
				if tools[d.Domain], err = taubench.ToolCatalogue(d.Domain); err != nil {
					t.Fatal(err)
				}
			}
			in := inception.Input{Tenant: "corpus", Domain: d.Domain, Tools: tools[d.Domain]}
			for _, m := range d.Messages {
				role := inception.RoleUser
				if m.Role == "assistant" {
					role = inception.RoleAgent
				}
				in.Dialogue = append(in.Dialogue, inception.Utterance{Role: role, Text: m.Content})
			}
			out = append(out, inception.Example{ID: d.ID, Input: in, Rein: *d.Label.Rein, ErrorType: *d.Label.ErrorType, Author: inception.CorpusAuthor(split)})
		}
	}
	return out
}
