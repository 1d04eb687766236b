package taubench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// CheckSummary is the result of Check; its JSON form is the last line of
// `rein tau check`.
type CheckSummary struct {
	GTTasks               int `json:"gt_tasks"`
	GTHashMatch           int `json:"gt_hash_match"`
	GTObservationMatch    int `json:"gt_observation_match"`
	GTObservations        int `json:"gt_observations"`
	Trajectories          int `json:"trajectories"`
	TrajectoryRewardMatch int `json:"trajectory_reward_match"`

	// Not part of the JSON line.
	GTRecordMismatch   int `json:"-"` // tasks whose changed records differ from the oracle
	GTUnverified       int `json:"-"` // tasks replayed without an oracle
	TrajObservations   int `json:"-"` // recorded tool observations replayed
	TrajObservationsOK int `json:"-"` // of which reproduced byte for byte
	Problems           int `json:"-"` // other failures (e.g. initial hash mismatch)
}

// JSONLine renders the summary as the final line of `rein tau check`:
// {"gt_tasks": N, "gt_hash_match": N, ...} with ", " and ": " separators.
func (c CheckSummary) JSONLine() string {
	return ToPyJSON(NewObject(
		"gt_tasks", int64(c.GTTasks), "gt_hash_match", int64(c.GTHashMatch),
		"gt_observation_match", int64(c.GTObservationMatch), "gt_observations", int64(c.GTObservations),
		"trajectories", int64(c.Trajectories), "trajectory_reward_match", int64(c.TrajectoryRewardMatch)))
}

// OK reports whether everything that was checked matched.
func (c CheckSummary) OK() bool {
	return c.GTHashMatch == c.GTTasks && c.GTObservationMatch == c.GTObservations &&
		c.TrajectoryRewardMatch == c.Trajectories && c.GTRecordMismatch == 0 && c.Problems == 0
}

// oracleFile is the shape of oracle/gt_replay_<domain>_<split>.json.
type oracleFile struct {
	Domain          string `json:"domain"`
	Split           string `json:"split"`
	InitialDataHash string `json:"initial_data_hash"`
	Tasks           []struct {
		TaskIndex      int             `json:"task_index"`
		GTDataHash     string          `json:"gt_data_hash"`
		DBUnchanged    bool            `json:"db_unchanged"`
		Replay         []oracleStep    `json:"replay"`
		ChangedRecords json.RawMessage `json:"changed_records"`
	} `json:"tasks"`
}

type oracleStep struct {
	Name        string  `json:"name"`
	Observation *string `json:"observation"`
	Skipped     bool    `json:"skipped_in_replay"`
}

// Check replays every task's ground truth of every domain and split found
// in dir (dir/airline, dir/retail), compares with dir/oracle when present,
// then replays the tool calls of every recorded conversation in
// dir/trajectories and compares rewards. It writes one line per check to w.
func Check(ctx context.Context, dir string, w io.Writer) (CheckSummary, error) {
	var sum CheckSummary
	loaded := map[string]*Domain{}
	for _, name := range []string{Airline, Retail} {
		ddir := filepath.Join(dir, name)
		if st, err := os.Stat(ddir); err != nil || !st.IsDir() {
			continue
		}
		d, err := Load(name, ddir)
		if err != nil {
			return sum, err
		}
		loaded[name] = d
		splits, err := Splits(ddir)
		if err != nil {
			return sum, err
		}
		for _, split := range splits {
			if err := checkSplit(ctx, d, dir, split, w, &sum); err != nil {
				return sum, err
			}
		}
	}
	if len(loaded) == 0 {
		return sum, fmt.Errorf("%w in %s (want airline/ or retail/)", ErrNoData, dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "trajectories", "*.json"))
	if err != nil {
		return sum, fmt.Errorf("list trajectories: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		var d *Domain
		for name, dom := range loaded {
			if strings.Contains(filepath.Base(f), name) {
				d = dom
			}
		}
		if d == nil {
			fmt.Fprintf(w, "trajectories %s: skipped, no domain data for it\n", filepath.Base(f))
			continue
		}
		if err := checkTrajectories(ctx, d, f, w, &sum); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

func checkSplit(ctx context.Context, d *Domain, dir, split string, w io.Writer, sum *CheckSummary) error {
	tasks, err := LoadTasks(filepath.Join(dir, d.name), split)
	if err != nil {
		return err
	}
	var oracle *oracleFile
	raw, err := os.ReadFile(filepath.Join(dir, "oracle", fmt.Sprintf("gt_replay_%s_%s.json", d.name, split)))
	switch {
	case err == nil:
		oracle = &oracleFile{}
		if err := json.Unmarshal(raw, oracle); err != nil {
			return fmt.Errorf("%w: oracle %s/%s: %w", ErrBadData, d.name, split, err)
		}
		if got := d.BaseFingerprint(); got != oracle.InitialDataHash {
			sum.Problems++
			fmt.Fprintf(w, "gt %s/%s initial hash: MISMATCH got %s want %s\n", d.name, split, got, oracle.InitialDataHash)
		} else {
			fmt.Fprintf(w, "gt %s/%s initial hash: ok %s\n", d.name, split, got)
		}
		if len(oracle.Tasks) != len(tasks) {
			sum.Problems++
			fmt.Fprintf(w, "gt %s/%s: MISMATCH oracle has %d tasks, task file %d\n", d.name, split, len(oracle.Tasks), len(tasks))
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return fmt.Errorf("read oracle: %w", err)
	}
	for i, t := range tasks {
		s, steps, err := d.ReplayGroundTruth(ctx, t)
		if err != nil {
			return fmt.Errorf("%s/%s task %d: %w", d.name, split, i, err)
		}
		if oracle == nil || i >= len(oracle.Tasks) {
			sum.GTUnverified++
			fmt.Fprintf(w, "gt %s/%s #%d: replayed %d actions, hash %s (no oracle)\n", d.name, split, i, len(steps), s.Fingerprint())
			continue
		}
		o := oracle.Tasks[i]
		sum.GTTasks++
		var notes []string
		hash := s.Fingerprint()
		if hash == o.GTDataHash {
			sum.GTHashMatch++
		} else {
			notes = append(notes, "hash MISMATCH")
		}
		obsOK, obsN := 0, 0
		for j, os := range o.Replay {
			if os.Skipped || os.Observation == nil {
				continue
			}
			obsN++
			if j < len(steps) && steps[j].Name == os.Name && steps[j].Observation == *os.Observation {
				obsOK++
			} else {
				notes = append(notes, fmt.Sprintf("observation %d (%s) MISMATCH", j, os.Name))
			}
		}
		if len(o.Replay) != len(steps) {
			notes = append(notes, fmt.Sprintf("replayed %d steps, oracle %d", len(steps), len(o.Replay)))
		}
		sum.GTObservations += obsN
		sum.GTObservationMatch += obsOK
		if diff, err := compareChanged(s, o.ChangedRecords); err != nil {
			return fmt.Errorf("%s/%s task %d: %w", d.name, split, i, err)
		} else if diff != "" {
			sum.GTRecordMismatch++
			notes = append(notes, "records MISMATCH: "+diff)
		}
		status := "ok"
		if len(notes) > 0 {
			status = strings.Join(notes, "; ")
		}
		fmt.Fprintf(w, "gt %s/%s #%d: hash %s, observations %d/%d: %s\n", d.name, split, i, hash, obsOK, obsN, status)
	}
	return nil
}

// compareChanged compares the session's changed records with the oracle's
// changed_records; it returns a description of the first differences.
func compareChanged(s *Session, raw json.RawMessage) (string, error) {
	want := &Object{}
	if len(raw) > 0 && string(raw) != "null" {
		v, err := ParseJSON(raw)
		if err != nil {
			return "", err
		}
		o, ok := v.(*Object)
		if !ok {
			return "", fmt.Errorf("%w: changed_records is not an object", ErrBadData)
		}
		want = o
	}
	got := s.Changed()
	var diffs []string
	seen := map[string]bool{}
	for i, tn := range want.Keys {
		recs, ok := want.Vals[i].(*Object)
		if !ok {
			return "", fmt.Errorf("%w: changed_records.%s", ErrBadData, tn)
		}
		for j, id := range recs.Keys {
			seen[tn+"/"+id] = true
			g, ok := got[tn][id]
			switch {
			case recs.Vals[j] == nil:
				if ok || s.hasRecord(tn, id) {
					diffs = append(diffs, tn+"/"+id+" should be removed")
				}
			case !ok:
				diffs = append(diffs, tn+"/"+id+" unchanged")
			case !Equal(g, recs.Vals[j]):
				diffs = append(diffs, tn+"/"+id+" differs")
			}
		}
	}
	// The oracle lists a record only when it differs under Python's ==
	// (so a balance going from 9 to 9.0 is not listed, though it changes
	// the fingerprint).
	for tn, recs := range got {
		for id, rec := range recs {
			base, _ := s.d.Record(tn, id)
			if !seen[tn+"/"+id] && !pyEq(base, rec) {
				diffs = append(diffs, tn+"/"+id+" changed unexpectedly")
			}
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, ", "), nil
}

func (s *Session) hasRecord(tableName, id string) bool {
	_, ok := s.Record(tableName, id)
	return ok
}

// trajectoryRecord is one recorded run (SPEC §9).
type trajectoryRecord struct {
	TaskID int     `json:"task_id"`
	Trial  int     `json:"trial"`
	Reward float64 `json:"reward"`
	Info   struct {
		Task Task `json:"task"`
	} `json:"info"`
	Traj []trajMessage `json:"traj"`
}

type trajMessage struct {
	Role      string  `json:"role"`
	Content   *string `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// TrajectoryReplay is the result of replaying one recorded run.
type TrajectoryReplay struct {
	Reward         float64
	Ended          bool // ended by ###STOP### or a transfer, so scored
	Observations   int  // recorded tool observations compared
	ObservationsOK int  // reproduced byte for byte
	Mismatched     []string
}

// ReplayTrajectory replays a recorded run's tool calls on a fresh session,
// treats assistant texts as replies to the user, stops at the first
// customer message containing ###STOP### or at a transfer, and scores the
// run. Runs that end neither way get reward 0.
func (d *Domain) ReplayTrajectory(ctx context.Context, task Task, traj []trajMessage) (TrajectoryReplay, error) {
	var out TrajectoryReplay
	s := d.NewSession()
	var responses []string
loop:
	for i, m := range traj {
		switch m.Role {
		case "user":
			if m.Content != nil && strings.Contains(*m.Content, "###STOP###") {
				out.Ended = true
				break loop
			}
		case "assistant":
			if len(m.ToolCalls) == 0 {
				if m.Content != nil {
					responses = append(responses, *m.Content)
				}
				continue
			}
			call := m.ToolCalls[0].Function
			obs, err := Observe(ctx, s, call.Name, json.RawMessage(call.Arguments))
			if err != nil {
				return out, err
			}
			if i+1 < len(traj) && traj[i+1].Role == "tool" && traj[i+1].Content != nil {
				out.Observations++
				if *traj[i+1].Content == obs {
					out.ObservationsOK++
				} else {
					out.Mismatched = append(out.Mismatched, call.Name)
				}
			}
			if Terminal(call.Name) {
				out.Ended = true
				break loop
			}
		}
	}
	if !out.Ended {
		return out, nil
	}
	r, err := d.Reward(ctx, task, s, responses)
	if err != nil {
		return out, err
	}
	out.Reward = r.Reward
	return out, nil
}

func checkTrajectories(ctx context.Context, d *Domain, file string, w io.Writer, sum *CheckSummary) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read trajectories: %w", err)
	}
	var runs []trajectoryRecord
	if err := json.Unmarshal(raw, &runs); err != nil {
		return fmt.Errorf("%w: trajectories %s: %w", ErrBadData, filepath.Base(file), err)
	}
	for _, r := range runs {
		rep, err := d.ReplayTrajectory(ctx, r.Info.Task, r.Traj)
		if err != nil {
			return fmt.Errorf("trajectory task %d trial %d: %w", r.TaskID, r.Trial, err)
		}
		sum.Trajectories++
		sum.TrajObservations += rep.Observations
		sum.TrajObservationsOK += rep.ObservationsOK
		status := "ok"
		if Success(rep.Reward) == Success(r.Reward) {
			sum.TrajectoryRewardMatch++
		} else {
			status = "reward MISMATCH"
		}
		fmt.Fprintf(w, "trajectory %s task %d trial %d: reward %g recorded %g, observations %d/%d: %s\n",
			d.name, r.TaskID, r.Trial, rep.Reward, r.Reward, rep.ObservationsOK, rep.Observations, status)
	}
	return nil
}
