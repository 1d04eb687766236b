package pipeline

import (
	"fmt"
	"path/filepath"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/natsserver"
)

// taskKey is the key the detector signs tasks with (through the injector
// library) and the agent worker checks them against (schemas.TaskKey),
// loaded once per process. With --task-key it is read from that file.
// Otherwise, on the embedded server (one process: nobody else signs or
// checks its tasks) it lives in the data directory, generated on first
// start. On an external NATS another process may run a replica of either
// stage — a task signed by one replica is checked by another after a
// fail-over — so every process needs the same key file, and --task-key is
// required there.
func (rt *Process) taskKey() (*schemas.TaskKey, error) {
	if rt.taskKeyLoaded != nil {
		return rt.taskKeyLoaded, nil
	}
	var err error
	switch {
	case rt.cfg.TaskKeyFile != "":
		rt.taskKeyLoaded, err = natsserver.LoadTaskKey(rt.cfg.TaskKeyFile, false)
	case rt.cfg.Connect.URL == "":
		rt.taskKeyLoaded, err = natsserver.LoadTaskKey(filepath.Join(rt.cfg.DataDir, natsserver.TaskKeyFile), true)
	default:
		return nil, fmt.Errorf("--task-key is required on an external NATS, where other processes may run replicas of the detector or the agent worker: give every rein process the same key file (%d+ random characters, e.g. a Kubernetes or Docker secret)", schemas.MinTaskKeyBytes)
	}
	return rt.taskKeyLoaded, err
}
