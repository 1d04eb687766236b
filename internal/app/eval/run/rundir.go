package run

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/reinception/rein/internal/app/eval"
)

// Files of a run directory.
const (
	ManifestFile  = "run.json"
	ScenariosFile = "scenarios.jsonl"
	ResultsFile   = "results.jsonl"
	PlaysDir      = "plays"
	CassettesDir  = "cassettes"
	// PipelinesDir holds the running pipelines' JetStream storage; it is
	// empty once a run has stopped.
	PipelinesDir = "pipelines"
)

// Manifest is run.json: what a run was started with. A rerun in the same
// directory must agree on everything but the conditions and trials, which
// may grow.
type Manifest struct {
	Format     int       `json:"format"`
	Created    time.Time `json:"created"`
	Conditions []string  `json:"conditions"`
	Trials     int       `json:"trials"`
	Trigger    string    `json:"trigger"`
	// PlantAt is the planting point (PlantOpening, PlantErrorTurn; empty
	// in a run made before it existed, which planted at the error turn).
	PlantAt  string `json:"plant_at,omitempty"`
	MaxTurns int    `json:"max_turns"`
	// ScenariosSHA256 identifies the scenario set (scenarios.jsonl).
	ScenariosSHA256 string `json:"scenarios_sha256"`
	Scenarios       int    `json:"scenarios"`
	// Agent, Inception and User describe the models ("provider model").
	Agent     string `json:"agent"`
	Inception string `json:"inception"`
	User      string `json:"user"`
	// Note goes into the report (e.g. that scripted figures measure the
	// harness, not a model).
	Note string `json:"note,omitempty"`
	// UserPrompt names the user simulator's prompt; AgentTemperature and
	// UserTemperature are the temperatures sent (all absent in a run made
	// before they were recorded: rein's prompt, provider defaults).
	UserPrompt       string   `json:"user_prompt,omitempty"`
	AgentTemperature *float64 `json:"agent_temperature,omitempty"`
	UserTemperature  *float64 `json:"user_temperature,omitempty"`
}

// manifestFormat is the current run.json format.
const manifestFormat = 1

// playKey names one play.
type playKey struct {
	condition, scenario string
	trial               int
}

// runDir is an opened run directory.
type runDir struct {
	dir  string
	mu   sync.Mutex
	done map[playKey]bool
}

// openRunDir creates dir or resumes the run in it: the manifest must match
// m (conditions and trials may grow), results.jsonl says which plays are
// finished. A last line cut short by a kill is dropped.
func openRunDir(dir string, m Manifest, scenarios []byte) (*runDir, error) {
	if err := os.MkdirAll(filepath.Join(dir, PlaysDir), 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRunDir, err)
	}
	sum := sha256.Sum256(scenarios)
	m.ScenariosSHA256 = hex.EncodeToString(sum[:])
	m.Format = manifestFormat
	old, err := ReadManifest(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		m.Created = time.Now().UTC()
	case err != nil:
		return nil, err
	default:
		if err := compatible(old, m); err != nil {
			return nil, fmt.Errorf("%w: %s holds another run: %w (use a new --out directory)", ErrRunDir, dir, err)
		}
		m.Created = old.Created
		for _, c := range old.Conditions {
			if !slices.Contains(m.Conditions, c) {
				m.Conditions = append(m.Conditions, c)
			}
		}
		m.Trials = max(m.Trials, old.Trials)
	}
	if err := writeJSON(filepath.Join(dir, ManifestFile), m); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ScenariosFile), scenarios, 0o644); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRunDir, err)
	}
	rd := &runDir{dir: dir, done: map[playKey]bool{}}
	results, err := readResults(dir, true)
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		rd.done[playKey{r.Condition, r.ScenarioID, r.Trial}] = true
	}
	return rd, nil
}

func compatible(old, m Manifest) error {
	switch {
	case old.Format != m.Format:
		return fmt.Errorf("run.json format %d, this rein writes %d", old.Format, m.Format)
	case old.ScenariosSHA256 != m.ScenariosSHA256:
		return errors.New("it was run on another scenario set")
	case old.Trigger != m.Trigger:
		return fmt.Errorf("trigger %s, not %s", old.Trigger, m.Trigger)
	case cmp.Or(old.PlantAt, PlantErrorTurn) != cmp.Or(m.PlantAt, PlantErrorTurn):
		return fmt.Errorf("plant-at %s, not %s", cmp.Or(old.PlantAt, PlantErrorTurn), cmp.Or(m.PlantAt, PlantErrorTurn))
	case cmp.Or(old.UserPrompt, UserPromptRein) != cmp.Or(m.UserPrompt, UserPromptRein):
		return fmt.Errorf("user prompt %s, not %s", cmp.Or(old.UserPrompt, UserPromptRein), cmp.Or(m.UserPrompt, UserPromptRein))
	case !sameTemperature(old.AgentTemperature, m.AgentTemperature) || !sameTemperature(old.UserTemperature, m.UserTemperature):
		return errors.New("other model temperatures")
	case old.MaxTurns != m.MaxTurns:
		return fmt.Errorf("max turns %d, not %d", old.MaxTurns, m.MaxTurns)
	case old.Agent != m.Agent || old.Inception != m.Inception || old.User != m.User:
		return fmt.Errorf("models agent %q, inception %q, user %q, not %q, %q, %q",
			old.Agent, old.Inception, old.User, m.Agent, m.Inception, m.User)
	}
	return nil
}

// sameTemperature compares two recorded temperatures (nil: not recorded).
func sameTemperature(a, b *float64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// ReadManifest reads a run directory's run.json.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%w: %s: %w", ErrRunDir, ManifestFile, err)
	}
	return m, nil
}

// ReadResults reads a run directory's finished plays (results.jsonl).
func ReadResults(dir string) ([]eval.Result, error) { return readResults(dir, false) }

// readResults reads results.jsonl. A last line without its newline is a
// write cut short by a kill: with repair it is removed from the file,
// otherwise skipped.
func readResults(dir string, repair bool) ([]eval.Result, error) {
	path := filepath.Join(dir, ResultsFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRunDir, err)
	}
	if cut := bytes.LastIndexByte(raw, '\n') + 1; cut < len(raw) {
		raw = raw[:cut]
		if repair {
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				return nil, fmt.Errorf("%w: repairing %s: %w", ErrRunDir, ResultsFile, err)
			}
		}
	}
	var out []eval.Result
	seen := map[playKey]bool{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var r eval.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %w", ErrRunDir, ResultsFile, line, err)
		}
		k := playKey{r.Condition, r.ScenarioID, r.Trial}
		if seen[k] {
			continue // a play finished twice (two runs at once): the first counts
		}
		seen[k] = true
		out = append(out, r)
	}
	return out, sc.Err()
}

func (rd *runDir) isDone(k playKey) bool {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.done[k]
}

// record stores a finished play: its record under plays/, then its result
// appended to results.jsonl and synced (the result line is what marks the
// play done).
func (rd *runDir) record(p *Play) error {
	sub := filepath.Join(rd.dir, PlaysDir, p.Condition)
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrRunDir, err)
	}
	if err := writeJSON(filepath.Join(sub, fmt.Sprintf("%s.t%d.json", p.ScenarioID, p.Trial)), p); err != nil {
		return err
	}
	line, err := json.Marshal(p.Result)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRunDir, err)
	}
	rd.mu.Lock()
	defer rd.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(rd.dir, ResultsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRunDir, err)
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRunDir, ResultsFile, err)
	}
	rd.done[playKey{p.Condition, p.ScenarioID, p.Trial}] = true
	return nil
}

// writeJSON writes v indented, through a temporary file and a rename.
func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRunDir, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("%w: %w", ErrRunDir, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%w: %w", ErrRunDir, err)
	}
	return nil
}
