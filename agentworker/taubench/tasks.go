package taubench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Action is one ground-truth tool call of a task. Kwargs is kept as raw
// JSON so that integer and float arguments keep their kind.
type Action struct {
	Name   string          `json:"name"`
	Kwargs json.RawMessage `json:"kwargs"`
}

// Task is one τ-bench task; its index in the split's file is its id.
type Task struct {
	UserID      string   `json:"user_id"`
	Instruction string   `json:"instruction"`
	Actions     []Action `json:"actions"`
	Outputs     []string `json:"outputs"`
	Annotator   string   `json:"annotator,omitempty"`
}

// LoadTasks reads dir/tasks_<split>.json.
func LoadTasks(dir, split string) ([]Task, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "tasks_"+split+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s in %s", ErrNoSplit, split, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("load tasks: %w", err)
	}
	return ParseTasks(raw)
}

// ParseTasks decodes a tasks_<split>.json document.
func ParseTasks(raw []byte) ([]Task, error) {
	var tasks []Task
	if err := json.Unmarshal(raw, &tasks); err != nil {
		return nil, fmt.Errorf("%w: tasks: %w", ErrBadData, err)
	}
	return tasks, nil
}

// Splits lists the task splits present in dir (from tasks_<split>.json), sorted.
func Splits(dir string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "tasks_*.json"))
	if err != nil {
		return nil, fmt.Errorf("list splits: %w", err)
	}
	var out []string
	for _, m := range matches {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "tasks_"), ".json"))
	}
	sort.Strings(out)
	return out, nil
}
