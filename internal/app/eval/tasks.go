package eval

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/reinception/rein/agentworker/taubench"
)

// DefaultTauBenchDir is where the τ-bench data directory is looked for,
// relative to the working directory (the repository root).
const DefaultTauBenchDir = "../shared/taubench"

// TaskSource reads τ-bench tasks from a data directory (<dir>/<domain>/
// tasks_<split>.json), each file once. It is safe for concurrent use.
type TaskSource struct {
	dir   string
	mu    sync.Mutex
	files map[string][]taubench.Task
}

// NewTaskSource opens the τ-bench data directory dir (DefaultTauBenchDir
// when empty). Files are read on first use.
func NewTaskSource(dir string) *TaskSource {
	if dir == "" {
		dir = DefaultTauBenchDir
	}
	return &TaskSource{dir: dir, files: map[string][]taubench.Task{}}
}

// Dir is the data directory.
func (ts *TaskSource) Dir() string { return ts.dir }

// Task returns the τ-bench task a scenario names.
func (ts *TaskSource) Task(s Scenario) (taubench.Task, error) {
	key := s.Domain + "/" + s.TaskSplit()
	ts.mu.Lock()
	tasks, ok := ts.files[key]
	if !ok {
		var err error
		tasks, err = taubench.LoadTasks(filepath.Join(ts.dir, s.Domain), s.TaskSplit())
		if err != nil {
			ts.mu.Unlock()
			return taubench.Task{}, fmt.Errorf("scenario %s: %w", s.ID, err)
		}
		ts.files[key] = tasks
	}
	ts.mu.Unlock()
	if s.TaskID >= len(tasks) {
		return taubench.Task{}, fmt.Errorf("%w: scenario %s names %s task %d of split %s, which has %d tasks",
			ErrUnknownTask, s.ID, s.Domain, s.TaskID, s.TaskSplit(), len(tasks))
	}
	return tasks[s.TaskID], nil
}

// Check verifies that every scenario's task exists; it reports all the
// scenarios that do not resolve.
func (ts *TaskSource) Check(set []Scenario) error {
	var errs []error
	for _, s := range set {
		if _, err := ts.Task(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
