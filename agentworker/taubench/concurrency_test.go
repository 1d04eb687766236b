package taubench

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestConcurrentSessions runs many conversations on one base at once (the
// lazy fingerprint rendering and flight index included); run with -race.
func TestConcurrentSessions(t *testing.T) {
	d := sample(t, Airline)
	var wg sync.WaitGroup
	hashes := make([]string, 8)
	for i := range hashes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := d.NewSession()
			ctx := context.Background()
			if _, err := s.Call(ctx, "search_onestop_flight", []byte(`{"origin": "BOS", "destination": "SEA", "date": "2024-05-21"}`)); err != nil {
				t.Error(err)
			}
			if _, err := s.Call(ctx, "cancel_reservation", []byte(`{"reservation_id": "Q7RM2K"}`)); err != nil {
				t.Error(err)
			}
			hashes[i] = s.Fingerprint()
		}()
	}
	wg.Wait()
	for _, h := range hashes[1:] {
		if h != hashes[0] {
			t.Fatal("same calls gave different fingerprints")
		}
	}
	if d.NewSession().Fingerprint() == hashes[0] {
		t.Fatal("cancellation not visible in the fingerprint")
	}
}

// TestToolsJSONOverride: a tools.json beside the data replaces descriptions.
func TestToolsJSONOverride(t *testing.T) {
	dir := t.TempDir()
	src, err := SampleFS(Retail)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, src); err != nil {
		t.Fatal(err)
	}
	override := `[{"type": "function", "function": {"name": "think", "description": "Ponder.", "parameters": {"type": "object", "properties": {"thought": {"type": "string", "description": "What to ponder."}}, "required": ["thought"]}}},
	  {"type": "function", "function": {"name": "calculate", "description": "Add things up.", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}}]`
	if err := os.WriteFile(filepath.Join(dir, "tools.json"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Load(Retail, dir)
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := ToolCatalogue(Retail)
	for i, tool := range d.Tools() {
		switch tool.Name {
		case "think":
			if tool.Description != "Ponder." || string(tool.Parameters) == string(ours[i].Parameters) {
				t.Errorf("think not overridden: %+v", tool)
			}
		case "calculate": // description taken, mismatching parameters ignored
			if tool.Description != "Add things up." || string(tool.Parameters) != string(ours[i].Parameters) {
				t.Errorf("calculate override wrong: %+v", tool)
			}
		default:
			if tool.Description != ours[i].Description {
				t.Errorf("%s changed", tool.Name)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tools.json"), []byte(`{`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(Retail, dir); err == nil {
		t.Error("broken tools.json accepted")
	}
	if _, err := LoadFS(Retail, fs.FS(os.DirFS(t.TempDir()))); err == nil {
		t.Error("empty directory accepted")
	}
	if _, err := Load("hotel", dir); err == nil {
		t.Error("unknown domain accepted")
	}
}

// TestLoadSharesAParseOfTheSameFiles: a second Load of unchanged files
// hands back the first Domain (an eval run loads each domain once per
// pipeline); a changed table or tools.json is parsed anew.
func TestLoadSharesAParseOfTheSameFiles(t *testing.T) {
	dir := t.TempDir()
	src, err := SampleFS(Airline)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, src); err != nil {
		t.Fatal(err)
	}
	first, err := Load(Airline, dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Load(Airline, dir)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Error("the same files were parsed twice")
	}
	if _, err := first.NewSession().Call(context.Background(), "cancel_reservation", []byte(`{"reservation_id": "Q7RM2K"}`)); err != nil {
		t.Fatal(err)
	}
	if again.BaseFingerprint() != first.BaseFingerprint() || first.NewSession().Fingerprint() != first.BaseFingerprint() {
		t.Error("a session's write reached the shared base")
	}
	// One reservation fewer: another base, another Domain.
	raw, err := os.ReadFile(filepath.Join(dir, "reservations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	delete(res, "Q7RM2K")
	if raw, err = json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reservations.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := Load(Airline, dir)
	if err != nil {
		t.Fatal(err)
	}
	if changed == first || changed.Digest() == first.Digest() {
		t.Fatal("a changed reservations.json gave the old Domain")
	}
	if _, ok := changed.Record("reservations", "Q7RM2K"); ok {
		t.Error("the removed reservation is still there")
	}
	// A tools.json beside unchanged tables: another Domain too.
	if err := os.WriteFile(filepath.Join(dir, "tools.json"), []byte(`[{"type": "function", "function": {"name": "think", "description": "Ponder.", "parameters": {"type": "object", "properties": {"thought": {"type": "string"}}, "required": ["thought"]}}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	withTools, err := Load(Airline, dir)
	if err != nil {
		t.Fatal(err)
	}
	if withTools == changed {
		t.Fatal("a new tools.json gave the old Domain")
	}
	for _, tool := range withTools.Tools() {
		if tool.Name == "think" && tool.Description != "Ponder." {
			t.Errorf("think not overridden: %q", tool.Description)
		}
	}
}
