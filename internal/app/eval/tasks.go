package eval

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
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

// PaperTasks returns the indices of the tasks the paper's protocol keeps:
// those whose ground-truth actions change the database and that require
// no outputs. The paper does not publish its criteria; this reconstruction
// keeps 27 of τ-bench's 50 airline test tasks (the paper's count exactly)
// and 73 of 115 retail ones (the paper has 71).
func PaperTasks(domain string, tasks []taubench.Task) []int {
	var keep []int
	for i, task := range tasks {
		if len(task.Outputs) == 0 && slices.ContainsFunc(task.Actions, func(a taubench.Action) bool { return StateChanging(domain, a.Name) }) {
			keep = append(keep, i)
		}
	}
	return keep
}
