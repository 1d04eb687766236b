package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// taskKey is the key the injector signs tasks with and the agent worker
// checks them against (schemas.TaskKey), loaded once per process. With
// --task-key it is read from that file. Otherwise it lives in the data
// directory, generated on first start, which serves a process that signs
// and checks its own tasks. Stages split across processes on an external
// NATS must share one key file: they each have their own data directory,
// so without --task-key every task would be refused.
func (rt *proc) taskKey() (*schemas.TaskKey, error) {
	if rt.taskKeyLoaded != nil {
		return rt.taskKeyLoaded, nil
	}
	f := rt.flags
	var err error
	switch {
	case f.taskKey != "":
		rt.taskKeyLoaded, err = streams.LoadTaskKey(f.taskKey, false)
	case f.nats.url == "" || (slices.Contains(rt.running, "injector") && slices.Contains(rt.running, "agentworker")):
		rt.taskKeyLoaded, err = streams.LoadTaskKey(filepath.Join(f.dataDir, streams.TaskKeyFile), true)
	default:
		return nil, fmt.Errorf("--task-key is required when the injector and the agent worker run in different processes on an external NATS: give every rein process the same key file (%d+ random bytes, mode 0600, e.g. from a Secret)", schemas.MinTaskKeyBytes)
	}
	return rt.taskKeyLoaded, err
}
